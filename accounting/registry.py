"""All accountants by name, and running several side by side."""

from __future__ import annotations

import importlib

from accounting.base import UNSUPPORTED, AccountingResult, run_accountant
from accounting.cost import BUDGET_SECONDS, announce_if_slow, estimate_seconds, stderr_progress
from accounting.errors import ConfigurationError, require_number
from accounting.mechanisms import Composition, Mechanism

# name -> (module, class); imported lazily so a missing optional peer only affects its own row.
ACCOUNTANTS = {
    "moments": ("accounting.moments", "MomentsAccountant"),
    "rdp": ("accounting.rdp", "RdpAccountant"),
    "pld": ("accounting.pld", "PldAccountant"),
    "prv": ("accounting.prv", "PrvAccountant"),
    "exact": ("accounting.exact", "ExactGaussianAccountant"),
    "dpa-rdp": ("accounting.dpa_rdp", "DpaRdpAccountant"),
}
DEFAULT_ACCOUNTANTS = tuple(ACCOUNTANTS)  # every accountant; each says why when it cannot answer


def parse_accountant_names(names) -> list[str]:
    """Validate a comma-separated string or list of accountant names."""
    if names is None:
        return list(DEFAULT_ACCOUNTANTS)
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in names if n not in ACCOUNTANTS]
    if unknown or not names:
        raise ConfigurationError(
            "accountants",
            f"unknown accountant {unknown[0] if unknown else '(none)'!r}; choose from {', '.join(ACCOUNTANTS)}",
        )
    twice = sorted({n for n in names if list(names).count(n) > 1})
    if twice:  # each row would be shown twice, as if two accountants agreed
        raise ConfigurationError("accountants", f"{twice[0]!r} is named twice")
    return list(names)


def get_accountant(name: str):
    """A new accountant object by its registry name (``ACCOUNTANTS``); ConfigurationError for an unknown one."""
    module_name, class_name = ACCOUNTANTS[parse_accountant_names([name])[0]]
    return getattr(importlib.import_module(module_name), class_name)()


def account_all(
    target: Composition | Mechanism, delta: float, names=None, insist=(), budget: float = BUDGET_SECONDS, progress=None
) -> list[AccountingResult]:
    """Epsilon at ``delta`` from each named accountant (all by default), side by side.

    An accountant predicted to take longer than ``budget`` seconds (``accounting.cost``) is skipped with
    the reason, unless it is in ``insist`` (the names a user asked for explicitly): then it runs with
    a line on ``progress`` (default stderr) before it and every 10 s while it runs. Opacus's PRV gets
    ``budget`` as a real time limit unless insisted on.
    """
    from accounting.mechanisms import as_composition

    delta = require_number("delta", delta, low=0, high=1, low_open=True, high_open=True)
    insist = set(parse_accountant_names(insist)) if insist else set()
    progress = progress or stderr_progress
    composition = as_composition(target)
    results = []
    for name in parse_accountant_names(names):
        seconds, what = estimate_seconds(name, composition)
        if seconds > budget and name not in insist:
            reason = f"skipped: would take about {seconds:.0f} s ({what}); `--accountants {name}` insists"
            results.append(AccountingResult(name, None, delta, UNSUPPORTED, reason))
            continue
        if seconds > budget:
            progress(f"{name}: about {seconds:.0f} s ({what}); running because it was asked for")
        engine = get_accountant(name)
        if hasattr(engine, "time_limit"):
            engine.time_limit = None if name in insist else budget
        with announce_if_slow(name, what, progress):
            results.append(run_accountant(engine, composition, delta=delta))
    return results
