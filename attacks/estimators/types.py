"""The result type every estimator returns: a lower bound on epsilon with what it rests on."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


def _plain(value):
    """Convert numpy scalars/arrays (recursively) to JSON-friendly Python values."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


@dataclass(frozen=True)
class EpsilonBound:
    """A lower bound on epsilon at ``delta``, holding with probability ``confidence`` (if ``rigorous``).

    ``rigorous`` is False for model-based or Bayesian estimates: they are reported, never used to
    declare a violation. ``epsilon`` is >= 0 (0.0 means no evidence) and never NaN. ``details`` holds
    the evidence (thresholds, counts, rates, intervals, the number of tests corrected for, ...).
    """

    method: str
    epsilon: float
    delta: float
    confidence: float
    rigorous: bool
    assumptions: str
    details: dict = field(default_factory=dict)

    def __post_init__(self):
        eps = float(self.epsilon)
        if math.isnan(eps) or eps < 0:
            eps = 0.0
        object.__setattr__(self, "epsilon", eps)

    def to_dict(self) -> dict:
        return {
            "method": self.method,
            "epsilon": self.epsilon,
            "delta": float(self.delta),
            "confidence": float(self.confidence),
            "rigorous": bool(self.rigorous),
            "assumptions": self.assumptions,
            "details": _plain(self.details),
        }
