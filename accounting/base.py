"""The accountant interface: epsilon for a delta (or delta for an epsilon) over a composition.

An accountant never raises on a configuration it cannot analyse and never returns NaN, a negative or
an infinite epsilon as a number: it returns an ``AccountingResult`` whose ``status`` says why.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Protocol

from accounting.mechanisms import Composition, Mechanism, as_composition

OK = "ok"
UNSUPPORTED = "unsupported"
FAILED = "failed"


@dataclass(frozen=True)
class AccountingResult:
    """One accountant's answer. ``epsilon``/``delta`` are None unless ``status == 'ok'``."""

    name: str
    epsilon: float | None
    delta: float | None
    status: str = OK
    reason: str = ""
    details: dict | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_dict(self) -> dict:
        return asdict(self)


class Accountant(Protocol):
    name: str

    def epsilon(self, composition: Composition, delta: float) -> float: ...

    def delta(self, composition: Composition, epsilon: float) -> float: ...


class Unsupported(Exception):
    """Raised inside an accountant for a configuration it does not analyse; becomes a status."""


def _checked(value: float, what: str) -> float:
    if value is None or not math.isfinite(value) or value < 0:
        raise FloatingPointError(f"{what} came out as {value!r}")
    return float(value)


def _details(accountant) -> dict | None:
    details = getattr(accountant, "last_details", None)
    return dict(details) if details else None


def run_accountant(accountant: Accountant, target: Composition | Mechanism, *, delta: float | None = None,
                   epsilon: float | None = None) -> AccountingResult:
    """Ask one accountant for epsilon(delta) or delta(epsilon), turning failures into a status."""
    composition = as_composition(target)
    try:
        if delta is not None:
            eps = _checked(accountant.epsilon(composition, delta), "epsilon")
            return AccountingResult(accountant.name, eps, float(delta), details=_details(accountant))
        d = _checked(accountant.delta(composition, epsilon), "delta")
        return AccountingResult(accountant.name, float(epsilon), min(d, 1.0), details=_details(accountant))
    except Unsupported as exc:
        return AccountingResult(accountant.name, None, delta, UNSUPPORTED, str(exc))
    except Exception as exc:  # an accountant must not crash the caller; the reason is reported
        return AccountingResult(accountant.name, None, delta, FAILED, f"{type(exc).__name__}: {exc}")
