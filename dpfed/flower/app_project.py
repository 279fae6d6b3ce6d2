"""A Flower app project as ``flwr run APP_DIR`` reads it (flwr 1.42): its ``pyproject.toml``, run config and apps.

``read_project`` validates the project with flwr's own ``validate_config`` (``[project]`` name and version,
``[tool.flwr.app]`` publisher, ``[tool.flwr.app.components]`` serverapp and clientapp as ``"module:attr"`` found
in the project, the ``[tool.flwr.app.config]`` values); ``run_config`` parses ``--run-config`` overrides with
flwr's ``parse_config_args`` (TOML values, strings quoted) and fuses them with the defaults as ``flwr run``
does (an unknown key is an error). ``load_apps`` imports the ServerApp and ClientApp (this runs the project's
code: naming the directory is the opt-in). Every problem is a ``ConfigurationError`` naming ``field``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from accounting.errors import ConfigurationError

# flwr's parse_config_args pattern (``flwr.common.config``): key=value with a quoted or unquoted value
_PAIR = re.compile(r"(\S+?)=(\'[^\']*\'|\"[^\"]*\"|\S+)")


@dataclass(frozen=True)
class AppProject:
    """A Flower app project: its directory, the ``module:attr`` of its apps and its default run config (flat)."""

    directory: str
    name: str
    serverapp: str
    clientapp: str
    defaults: dict


def _one_line(error) -> str:
    return " ".join(str(error).split())


def read_project(directory, field: str = "app") -> AppProject:
    """The project in ``directory``, validated as ``flwr run`` validates it."""
    from flwr.common.config import flatten_dict, validate_config

    path = Path(directory).expanduser()
    if not path.is_dir():
        raise ConfigurationError(field, f"{directory} is not a directory (a Flower app project)")
    toml = path / "pyproject.toml"
    if not toml.is_file():
        raise ConfigurationError(field, f"{directory} has no pyproject.toml (not a Flower app project)")
    import tomllib

    try:
        config = tomllib.loads(toml.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(field, f"cannot read {toml}: {_one_line(exc)}") from None
    try:
        valid, errors, _ = validate_config(config, check_module=True, project_dir=path.resolve())
    except ValueError as exc:  # a run-config value flwr cannot take
        valid, errors = False, [str(exc)]
    if not valid:
        raise ConfigurationError(field, f"{toml}: " + "; ".join(_one_line(e) for e in errors))
    app = config["tool"]["flwr"]["app"]
    return AppProject(str(path.resolve()), str(config["project"]["name"]), app["components"]["serverapp"],
                      app["components"]["clientapp"], flatten_dict(app.get("config", {})))


def parse_run_config(text: str, field: str = "run-config") -> dict:
    """``"key=value ..."`` as ``flwr run --run-config`` takes it (TOML values; a string quoted); anything that is
    not a ``key=value`` pair is an error (flwr's parser would skip it)."""
    import click
    from flwr.common.config import parse_config_args

    text = str(text)
    leftover = _PAIR.sub("", text).strip()
    if leftover:
        raise ConfigurationError(field, f"{leftover.split()[0]!r} is not a key=value pair (e.g. 'rounds=3 "
                                        "mode=\"fast\"': TOML values, strings quoted)")
    if text.strip().endswith(".toml"):
        raise ConfigurationError(field, "give key=value pairs, not a TOML file")
    try:
        return parse_config_args([text]) if text.strip() else {}
    except (click.ClickException, ValueError) as exc:
        message = exc.format_message() if isinstance(exc, click.ClickException) else str(exc)
        raise ConfigurationError(field, f"{text!r}: {_one_line(message)}") from None


def fused_run_config(project: AppProject, overrides: dict, field: str = "run-config") -> dict:
    """The project's defaults with ``overrides`` (flat keys) as ``flwr run`` fuses them; an unknown key, or a
    value of another type than the default's (an int where a float is expected is allowed), is an error."""
    fused = dict(project.defaults)
    for key, value in overrides.items():
        if key not in project.defaults:
            known = ", ".join(sorted(project.defaults)) or "none"
            raise ConfigurationError(f"{field}.{key}", f"not a key of {project.name}'s [tool.flwr.app.config] "
                                                       f"(keys: {known})")
        default = project.defaults[key]
        same = type(value) is type(default) or (type(value) is int and type(default) is float)
        if not same or isinstance(value, dict):
            raise ConfigurationError(f"{field}.{key}", f"expected a {type(default).__name__} like the default "
                                                       f"{default!r}, got {value!r}")
        fused[key] = value
    return fused


def load_apps(project: AppProject, field: str = "app"):
    """``(ServerApp, ClientApp)`` imported from the project (runs its module code)."""
    import sys

    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp
    from flwr.supercore.object_ref import load_app

    loaded = []
    for role, ref, kind in (("serverapp", project.serverapp, ServerApp), ("clientapp", project.clientapp, ClientApp)):
        module = ref.partition(":")[0]
        existing = sys.modules.get(module)
        origin = getattr(existing, "__file__", None)
        if origin and not Path(origin).resolve().is_relative_to(project.directory):
            raise ConfigurationError(field, f"module {module!r} of {role} is already imported from {origin}, not "
                                            f"from {project.directory}; audit one app per process")
        try:
            app = load_app(ref, ValueError, project.directory)
        except Exception as exc:  # noqa: BLE001 - the project's own import error, reported in one line
            raise ConfigurationError(field, f"cannot load {role} {ref!r}: {type(exc).__name__}: "
                                            f"{_one_line(exc)}") from None
        if not isinstance(app, kind):
            raise ConfigurationError(field, f"{role} {ref!r} is a {type(app).__name__}, not a {kind.__name__}")
        loaded.append(app)
    return tuple(loaded)
