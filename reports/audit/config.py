"""Audit configuration files (TOML): strict parsing into ``reports.audit.model.TargetSpec`` objects.

Layout::

    title = "..."            # optional
    seed = 2026              # optional (the command's --seed wins)
    confidence = 0.95        # optional

    [[target]]
    name = "..."
    algorithm = "dp-fts-de" | "dp-fts" | "dp-fed-pne" | "mechanism" | "dp-duets" | "duets"
              | "dp-fedzero" | "fedzero" | "dp-fkm" | "fkm" | "flower-app" | "dp-sgd"
    description = "..."      # optional
    accountants = ["moments", "rdp", "pld", "prv", "exact", "dpa-rdp"]   # optional
    utility_runs = 2         # optional
    reference_delta = 1e-5   # optional: the conventional delta the report also accounts at
    [target.parameters]      # the algorithm's parameters (or the bare mechanism's)
    [target.claim]           # epsilon, delta (a number or "N^-x"), neighbouring, unit, [source, units]
    [[target.probes]]        # name (see `dpaudit attack --help`), kind, trials, [params, batch_size]
                             # (trials may be left out where the target plans a budget: dp-sgd)

Every problem raises ``ConfigurationError`` naming the field (for example ``target[0].claim.delta``).
A target's ``parameters`` are checked by its target class (``reports.audit.targets``) when it is built,
before any work; a probe's ``params`` against the fields its class declares. The ``user`` probe and the
dp-sgd target's ``setup = "file.py:function"`` (relative to the configuration file) import Python code named
in the file, so they need ``allow_code`` (``dpaudit audit --allow-code``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import tomllib
from pathlib import Path

from accounting import strict
from accounting.errors import ConfigurationError, require_number
from accounting.registry import parse_accountant_names
from reports.audit.model import Claim, ProbeSpec, TargetSpec

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "defaults" / "default_audit.toml"
_POWER = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*\^\s*(-?[0-9]+(?:\.[0-9]+)?)\s*$")
PROBE_SCHEMA = {
    "name": strict.Required(strict.STRING),
    "kind": strict.STRING,
    "trials": strict.NUMBER,  # optional only where the target plans a default budget (dp-sgd)
    "params": strict.ANY_TABLE,
    "batch_size": strict.NUMBER,
}
CLAIM_SCHEMA = {
    "epsilon": strict.Required(strict.NUMBER),
    "delta": strict.Required(strict.NUMBER_OR_STRING),
    "neighbouring": strict.Required(strict.STRING),
    "unit": strict.Required(strict.STRING),
    "source": strict.STRING,
    "units": strict.INTEGER,
    "unit_plural": strict.STRING,
}
TARGET_SCHEMA = {
    "name": strict.STRING,
    "algorithm": strict.Required(strict.STRING),
    "description": strict.STRING,
    "accountants": strict.STRINGS,
    "utility_runs": strict.INTEGER,
    "reference_delta": strict.NUMBER_OR_STRING,
    "parameters": strict.ANY_TABLE,
    "claim": strict.Required(CLAIM_SCHEMA),
    "probes": strict.ArrayOf(PROBE_SCHEMA),
}
CONFIG_SCHEMA = {
    "title": strict.STRING,
    "seed": strict.INTEGER,
    "confidence": strict.NUMBER,
    "target": strict.Required(strict.ArrayOf(TARGET_SCHEMA)),
}
NEIGHBOURING = ("add-remove", "replace-one")
KINDS = ("mechanism", "end-to-end")


def parse_delta(field: str, value) -> float:
    """A delta given as a number or as a power such as "29^-1.1"; must lie in (0, 1)."""
    if isinstance(value, str):
        match = _POWER.match(value)
        if not match:
            raise ConfigurationError(field, f'expected a number or a power like "29^-1.1", got {value!r}')
        try:
            value = float(match.group(1)) ** float(match.group(2))
        except (OverflowError, ZeroDivisionError):
            raise ConfigurationError(field, f"{value!r} is not a number between 0 and 1") from None
    return require_number(field, value, low=0, high=1, low_open=True, high_open=True)


def _claim(field: str, data: dict) -> Claim:
    neighbouring = data["neighbouring"].lower().replace("_", "-")
    if neighbouring not in NEIGHBOURING:
        raise ConfigurationError(
            f"{field}.neighbouring", f"choose add-remove or replace-one, got {data['neighbouring']!r}"
        )
    units = data.get("units")
    return Claim(
        epsilon=require_number(f"{field}.epsilon", data["epsilon"], low=0, low_open=True),
        delta=parse_delta(f"{field}.delta", data["delta"]),
        neighbouring=neighbouring,
        unit=data["unit"],
        source=data.get("source", ""),
        delta_given=data["delta"].replace(" ", "") if isinstance(data["delta"], str) else None,
        units=None if units is None else int(require_number(f"{field}.units", units, low=1, integer=True)),
        unit_plural=data.get("unit_plural", "units"),
    )


def _check_probe_params(field: str, name: str, params: dict) -> None:
    """Refuse parameters the probe does not declare, and values of the wrong type (by the field's
    annotation, as ``dpaudit attack`` checks them: ``noise_reduction = true`` is not the number 1)."""
    from attacks.probes import probe_class

    cls = probe_class(name)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ConfigurationError(
            f"{field}.{unknown[0]}", f"not a parameter of probe {name!r}; known: {', '.join(sorted(known))}"
        )
    strict.check_table(field, params, strict.dataclass_schema(cls))


def _probe(field: str, data: dict, allow_code: bool) -> ProbeSpec:
    from attacks.probes import PROBES

    name = data["name"]
    if name not in PROBES:
        raise ConfigurationError(f"{field}.name", f"unknown probe {name!r}; choose from {', '.join(PROBES)}")
    if name == "user" and not allow_code:
        raise ConfigurationError(
            f"{field}.name",
            "the user probe imports Python code named in the configuration; run with --allow-code to allow it",
        )
    kind = data.get("kind", "end-to-end" if "end-to-end" in name else "mechanism")
    if kind not in KINDS:
        raise ConfigurationError(f"{field}.kind", f"choose mechanism or end-to-end, got {kind!r}")
    trials = data.get("trials")
    trials = None if trials is None else int(require_number(f"{field}.trials", trials, low=1, integer=True))
    batch = data.get("batch_size")
    batch = None if batch is None else int(require_number(f"{field}.batch_size", batch, low=1, integer=True))
    params = dict(data.get("params", {}))
    _check_probe_params(f"{field}.params", name, params)
    if params.get("setup") and not allow_code:  # a DP-SGD probe's user set-up ("module:function")
        raise ConfigurationError(f"{field}.params.setup",
                                 "names Python code to import; run with --allow-code to allow it")
    return ProbeSpec(name, kind, trials, params, batch)


def _code_parameters(field: str, parameters: dict, allow_code: bool, base_dir: str) -> dict:
    """A target's ``setup`` or ``train = "file.py:function"`` (the dp-sgd target) names Python code: refused
    without ``allow_code``; its file is resolved relative to the configuration file's folder."""
    out = dict(parameters)
    for key, default in (("setup", "make_setup"), ("train", "main")):
        if key in parameters:
            out[key] = _code_reference(f"{field}.{key}", parameters[key], allow_code, base_dir, default)
    return out


def _code_reference(field: str, value, allow_code: bool, base_dir: str, default: str) -> str:
    if not allow_code:
        raise ConfigurationError(field, "names Python code to import; run with --allow-code to allow it")
    if not isinstance(value, str) or not value:
        raise ConfigurationError(field, f'expected "file.py:function", got {value!r}')
    head, sep, tail = value.rpartition(":")
    path, function = (head, tail) if sep and head and "/" not in tail else (value, "")
    if not path.endswith(".py"):
        raise ConfigurationError(field, f'expected "file.py:function" (a Python file), got {value!r}')
    resolved = Path(path) if Path(path).is_absolute() else (Path(base_dir) if base_dir else Path.cwd()) / path
    if not resolved.is_file():
        raise ConfigurationError(field, f"file not found: {resolved} (a path relative to the configuration file)")
    return f"{resolved.resolve()}:{function or default}"


def _target(field: str, data: dict, allow_code: bool, base_dir: str = "") -> TargetSpec:
    try:
        accountants = tuple(parse_accountant_names(data["accountants"])) if "accountants" in data else None
    except ConfigurationError as exc:
        raise ConfigurationError(f"{field}.accountants", str(exc).split(": ", 1)[1]) from None
    probes = tuple(_probe(f"{field}.probes[{i}]", p, allow_code) for i, p in enumerate(data.get("probes", [])))
    return TargetSpec(
        name=data.get("name", data["algorithm"]),
        algorithm=data["algorithm"],
        claim=_claim(f"{field}.claim", data["claim"]),
        description=data.get("description", ""),
        parameters=_code_parameters(f"{field}.parameters", dict(data.get("parameters", {})), allow_code, base_dir),
        probes=probes,
        accountants=accountants or TargetSpec.accountants,
        utility_runs=int(require_number(f"{field}.utility_runs", data.get("utility_runs", 1), low=1, integer=True)),
        reference_delta=parse_delta(f"{field}.reference_delta", data.get("reference_delta", 1e-5)),
        base_dir=base_dir,
        allow_code=allow_code,
        probes_given="probes" in data,
    )


def _check_unique_names(specs) -> None:
    """The report, its summary lines and its figure tell targets apart by name (default: the algorithm)."""
    first: dict[str, int] = {}
    for i, spec in enumerate(specs):
        if spec.name in first:
            raise ConfigurationError(
                f"target[{i}].name",
                f"{spec.name!r} is also the name of target[{first[spec.name]}]; give each target its own name",
            )
        first[spec.name] = i


def parse_config(text: str, source: str = "<string>", allow_code: bool = False, base_dir: str = "") -> dict:
    """Validate a configuration strictly (unknown keys, misplaced keys and wrong types are errors naming
    the key's path); returns {title, seed, confidence, targets, raw, text, hash, source}. ``base_dir``: the
    directory a target's relative paths start from (the configuration file's)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError("config", f"{source} is not valid TOML ({exc})") from None
    except RecursionError:  # the parser recurses per level of nested arrays and inline tables
        raise ConfigurationError("config", f"{source} is not valid TOML (nested too deeply)") from None
    strict.check_table("", raw, CONFIG_SCHEMA)
    if not raw["target"]:
        raise ConfigurationError("target", "missing: the configuration audits no target ([[target]])")
    specs = [_target(f"target[{i}]", t, allow_code, base_dir) for i, t in enumerate(raw["target"])]
    _check_unique_names(specs)
    confidence = require_number("confidence", raw.get("confidence", 0.95), low=0, high=1, low_open=True, high_open=True)
    return {
        "title": raw.get("title", "dpfed-audit report"),
        "seed": int(require_number("seed", raw.get("seed", 0), low=0, integer=True)),
        "confidence": confidence,
        "targets": specs,
        "raw": raw,
        "text": text,
        "source": source,
        "hash": "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest(),
    }


def load_config(path: str | Path | None, allow_code: bool = False) -> dict:
    """Read and validate a configuration file (the built-in default when ``path`` is None)."""
    path = Path(path) if path is not None else DEFAULT_CONFIG
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError("config", f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError("config", f"cannot read {path} ({exc})") from None
    source = "built-in default (reports/defaults/default_audit.toml)" if path == DEFAULT_CONFIG else str(path)
    return parse_config(text, source, allow_code, str(path.resolve().parent))
