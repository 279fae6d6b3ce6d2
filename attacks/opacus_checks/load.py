"""Load a user's opacus set-up: ``path/to/file.py:function`` returning a dict.

The function takes no arguments and returns a dict with these keys (``SETUP_KEYS``):

- ``model``, ``optimizer``, ``data_loader``: what ``PrivacyEngine.make_private`` (or
  ``make_private_with_epsilon``) returned; the optimizer must be opacus's ``DPOptimizer``.
- ``privacy_engine``: the ``PrivacyEngine`` whose accountant the optimizer reports to.
- ``epochs``: how many passes over ``data_loader`` the training loop makes.
- optional ``delta`` (default: the command's ``--delta``), ``claim_epsilon`` (the epsilon the user
  reports, as ``--claim-epsilon``; the older key ``claimed_epsilon`` is read too, with a warning; default:
  opacus's accountant over the planned steps), and ``accounted_epochs`` or
  ``accounted_steps`` (what the claim or ``make_private_with_epsilon`` was computed for; default: the
  steps the loop runs); ``input_key`` (a key or a list of keys) and ``label_key``: where dict batches hold
  the model's input and the label (default: inferred, see ``attacks.opacus_checks.batches``).

Batches are built as the loader builds them (its ``collate_fn``) and may be tensors, (input, label) tuples or
lists, or dicts (``attacks.opacus_checks.batches``). Naming the file is the
explicit opt-in to running its code. Every failure is one line: a function that needs arguments is refused
before it runs, opacus refusing the model (``ModuleValidator``: BatchNorm and the like) is summarised with
its fix, and any other error of the user's code is cut to ``MESSAGE_LIMIT`` characters.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

from accounting.errors import ConfigurationError, require_number
from attacks.opacus_checks.batches import MESSAGE_LIMIT, check_keys, one_line  # noqa: F401 - MESSAGE_LIMIT: its API

REQUIRED_KEYS = ("model", "optimizer", "data_loader", "privacy_engine", "epochs")
OPTIONAL_KEYS = ("delta", "claim_epsilon", "accounted_epochs", "accounted_steps", "input_key", "label_key")
SETUP_KEYS = REQUIRED_KEYS + OPTIONAL_KEYS
OLD_KEYS = {"claimed_epsilon": "claim_epsilon"}  # still read, with a one-line warning
DEFAULT_FUNCTION = "make_setup"


@dataclass
class OpacusSetup:
    """A user's opacus training set-up, validated (see the module docstring for the fields)."""

    model: object
    optimizer: object
    data_loader: object
    privacy_engine: object
    epochs: int
    delta: float | None = None
    claim_epsilon: float | None = None
    accounted_epochs: float | None = None
    accounted_steps: int | None = None
    input_key: str | tuple | None = None  # the input's key(s) in dict batches (default: inferred, ``batches``)
    label_key: str | None = None


def split_spec(spec: str, default: str = DEFAULT_FUNCTION) -> tuple[Path, str]:
    """``file.py:function`` (function defaults to ``default``, ``make_setup``) as (path, name)."""
    text = str(spec)
    head, sep, tail = text.rpartition(":")
    if sep and head and "/" not in tail:
        return Path(head), (tail or default)
    return Path(text), default


def load_function(spec: str, default: str = DEFAULT_FUNCTION, role: str | None = "set-up function"):
    """Import the file and return its function, ``default`` when none is named (ConfigurationError, one line, on
    any failure; ``role`` names the function in the message; None: it may take arguments)."""
    path, name = split_spec(spec, default)
    if not path.is_file():
        raise ConfigurationError("setup", f"file not found: {path}")
    if path.suffix != ".py":
        raise ConfigurationError("setup", f"{path} is not a Python file (expected file.py:function)")
    module_name = f"dpaudit_opacus_setup_{abs(hash(str(path.resolve())))}"
    spec_obj = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec_obj)
    sys.modules[module_name] = module
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec_obj.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's module (sys.exit too): a bad input
        sys.modules.pop(module_name, None)
        raise ConfigurationError("setup", f"importing {path} failed: {type(exc).__name__}: {one_line(exc)}") from None
    function = getattr(module, name, None)
    if function is None:
        raise ConfigurationError("setup", f"{path} has no function {name!r}")
    if not callable(function):
        raise ConfigurationError("setup", f"{path}:{name} is not a function")
    if role is not None:
        _require_no_arguments(function, f"{path}:{name}", role)
    return function


def _require_no_arguments(function, where: str, role: str = "set-up function") -> None:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable without a signature: calling it will tell
        return
    required = [p.name for p in parameters if p.default is p.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if required:
        raise ConfigurationError("setup", f"{where} takes argument{'s' if len(required) > 1 else ''} "
                                 f"({', '.join(required)}); the {role} must take none (give "
                                 "defaults, or wrap it in a function without arguments)")


def _module_refusal(exc) -> str | None:
    """opacus's ``UnsupportedModuleError`` (a list of errors, ~900 characters for BatchNorm) in one line."""
    from opacus.validators.errors import UnsupportedModuleError

    if not isinstance(exc, UnsupportedModuleError):
        return None
    errors = exc.args[0] if exc.args and isinstance(exc.args[0], (list, tuple)) else [exc]
    problems = []
    for error in errors:
        text = str(error)
        if "BatchNorm" in text:
            problem = ("BatchNorm (it normalises each record by the others in its batch): replace it with "
                       "GroupNorm, e.g. model = opacus.validators.ModuleValidator.fix(model) before make_private")
        elif "training mode" in text:
            problem = "the model is in eval mode: call model.train() before make_private"
        else:
            first = text.split(". ")[0]
            problem = f"{one_line(first)} (opacus.validators.ModuleValidator.fix(model) replaces what it can)"
        if problem not in problems:
            problems.append(problem)
    return "opacus refuses the model: " + "; ".join(problems)


def build_setup(spec: str) -> OpacusSetup:
    """Run the user's function and validate what it returned."""
    function = load_function(spec)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # opacus's secure-RNG notice and the like
            value = function()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's code (sys.exit too): a bad input
        refusal = _module_refusal(exc)
        if refusal:
            raise ConfigurationError("setup", f"{spec}: {refusal}") from None
        raise ConfigurationError("setup", f"{spec} raised {type(exc).__name__}: {one_line(exc)}") from None
    return validate(value, spec)


def _with_todays_keys(value: dict) -> dict:
    """``value`` with an old key (``OLD_KEYS``) renamed, warning once; both spellings at once are refused."""
    from accounting.vocabulary import warn_old_spelling

    for old, new in OLD_KEYS.items():
        if old in value:
            if new in value:
                raise ConfigurationError("setup", f"gives both {old!r} and {new!r}; give {new!r} only")
            warn_old_spelling(f"the set-up key {old!r}", repr(new))
            value = {(new if k == old else k): v for k, v in value.items()}
    return value


def validate(value, spec: str = "setup") -> OpacusSetup:
    """Check the returned dict: its keys, and that it is an opacus set-up (ConfigurationError if not)."""
    if not isinstance(value, dict):
        raise ConfigurationError("setup", f"{spec} returned {type(value).__name__}, expected a dict with keys "
                                 f"{', '.join(REQUIRED_KEYS)} (not an opacus set-up)")
    value = _with_todays_keys(value)
    unknown = sorted(set(value) - set(SETUP_KEYS))
    if unknown:
        raise ConfigurationError("setup", f"unknown key {unknown[0]!r}; the keys are {', '.join(SETUP_KEYS)}")
    missing = [k for k in REQUIRED_KEYS if k not in value]
    if missing:
        raise ConfigurationError("setup", f"{spec} returned no {missing[0]!r} (not an opacus set-up)")
    from opacus import PrivacyEngine
    from opacus.optimizers import DPOptimizer
    from torch.utils.data import DataLoader

    if not isinstance(value["optimizer"], DPOptimizer):
        raise ConfigurationError("setup", f"the optimizer is a {type(value['optimizer']).__name__}, not opacus's "
                                 "DPOptimizer (not an opacus set-up: pass what make_private returned)")
    if not isinstance(value["privacy_engine"], PrivacyEngine):
        raise ConfigurationError("setup", f"privacy_engine is a {type(value['privacy_engine']).__name__}, not "
                                 "opacus's PrivacyEngine (not an opacus set-up)")
    if not isinstance(value["data_loader"], DataLoader):
        raise ConfigurationError("setup", f"data_loader is a {type(value['data_loader']).__name__}, not a torch "
                                 "DataLoader (not an opacus set-up)")
    if not callable(value["model"]):
        raise ConfigurationError("setup", "model is not callable (not an opacus set-up)")
    if isinstance(value["optimizer"].max_grad_norm, (list, tuple)):
        raise ConfigurationError("setup", "per-layer clipping (a list of max_grad_norm) is not supported")
    epochs = int(require_number("epochs", value["epochs"], low=1, integer=True))
    delta = value.get("delta")
    if delta is not None:
        delta = require_number("delta", delta, low=0, high=1, low_open=True, high_open=True)
    claimed = value.get("claim_epsilon")
    if claimed is not None:
        claimed = require_number("claim_epsilon", claimed, low=0, low_open=True)
    if value.get("accounted_epochs") is not None and value.get("accounted_steps") is not None:
        raise ConfigurationError("setup", "give accounted_epochs or accounted_steps, not both")
    accounted_epochs = value.get("accounted_epochs")
    if accounted_epochs is not None:
        accounted_epochs = require_number("accounted_epochs", accounted_epochs, low=0, low_open=True)
    accounted_steps = value.get("accounted_steps")
    if accounted_steps is not None:
        accounted_steps = int(require_number("accounted_steps", accounted_steps, low=1, integer=True))

    input_key, label_key = check_keys(value.get("input_key"), value.get("label_key"))
    return OpacusSetup(value["model"], value["optimizer"], value["data_loader"], value["privacy_engine"], epochs,
                       delta, claimed, accounted_epochs, accounted_steps, input_key, label_key)
