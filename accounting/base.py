"""The accountant interface: epsilon for a delta (or delta for an epsilon) over a composition.

An accountant never raises on a configuration it cannot analyse and never returns NaN or a negative
number: it returns an ``AccountingResult`` whose ``status`` says why. An epsilon of ``math.inf`` with
status ``ok`` is an answer: the accountant certifies no finite epsilon at that delta (for ``exact``:
the configuration is not private at that delta, e.g. noise too small to matter; for an upper-bound
accountant: its bound is infinite there).
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
    """One accountant's answer. ``epsilon``/``delta`` are None unless ``status == 'ok'``; an ok
    ``epsilon`` may be ``math.inf`` (no finite epsilon at this delta), never NaN or negative."""

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
    """What every accountant class offers (``accounting.registry.ACCOUNTANTS`` names them): ``epsilon`` at a delta
    and ``delta`` at an epsilon of a composition, each an upper bound for the composition's neighbouring relation;
    ``Unsupported`` where the accountant cannot analyse it. ``run_accountant`` wraps either in an
    ``AccountingResult``."""

    name: str

    def epsilon(self, composition: Composition, delta: float) -> float:
        """The smallest epsilon the accountant proves for ``composition`` at ``delta``."""
        ...

    def delta(self, composition: Composition, epsilon: float) -> float:
        """The smallest delta the accountant proves for ``composition`` at ``epsilon``."""
        ...


class Unsupported(Exception):
    """Raised inside an accountant for a configuration it does not analyse; becomes a status."""


def _checked(value: float, what: str) -> float:
    """``value`` as a float; NaN, negative (and for delta, infinite) values are accountant failures."""
    if value is None or math.isnan(value) or value < 0 or (what == "delta" and math.isinf(value)):
        raise FloatingPointError(f"{what} came out as {value!r}")
    return float(value)


def _details(accountant) -> dict | None:
    details = getattr(accountant, "last_details", None)
    return dict(details) if details else None


def run_accountant(
    accountant: Accountant, target: Composition | Mechanism, *, delta: float | None = None, epsilon: float | None = None
) -> AccountingResult:
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
    except MemoryError:
        return AccountingResult(
            accountant.name, None, delta, UNSUPPORTED, "needs more memory than this machine has for this configuration"
        )
    except Exception as exc:  # an accountant must not crash the caller; the reason is reported
        return AccountingResult(accountant.name, None, delta, FAILED, f"{type(exc).__name__}: {exc}")
