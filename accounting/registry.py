"""All accountants by name, and running several side by side."""

from __future__ import annotations

import importlib

from accounting.base import AccountingResult, run_accountant
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
    return list(names)


def get_accountant(name: str):
    module_name, class_name = ACCOUNTANTS[parse_accountant_names([name])[0]]
    return getattr(importlib.import_module(module_name), class_name)()


def account_all(target: Composition | Mechanism, delta: float, names=None) -> list[AccountingResult]:
    """Epsilon at ``delta`` from each named accountant (all by default), side by side."""
    delta = require_number("delta", delta, low=0, high=1, low_open=True, high_open=True)
    return [run_accountant(get_accountant(n), target, delta=delta) for n in parse_accountant_names(names)]
