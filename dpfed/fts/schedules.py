"""Public, data-independent schedules: the mixing probability p_t and the DE sub-region weights.

Both depend only on the round and on the public slot assignment, never on data, so they cost no privacy.
"""

from __future__ import annotations

import numpy as np

from accounting.errors import ConfigurationError

MIXING_SCHEDULES = ("reciprocal", "reciprocal-square", "local", "global")


def mixing_probability(iteration: int, schedule: str = "reciprocal") -> float:
    """Probability p_j that an agent plays local Thompson sampling at BO iteration ``j`` (1-based).

    ``reciprocal``: p_j = 1 - 1/j (reference code; p_1 = 0, so the first iteration always uses the
    broadcast); ``reciprocal-square``: 1 - 1/j^2 (the theory's rate, faster decay of the others'
    influence); ``local``: 1 (plain local TS, no federation); ``global``: 0 (always use the broadcast).
    """
    j = int(iteration)
    if schedule == "reciprocal":
        return 1.0 - 1.0 / j
    if schedule == "reciprocal-square":
        return 1.0 - 1.0 / j**2
    if schedule == "local":
        return 1.0
    if schedule == "global":
        return 0.0
    raise ConfigurationError(
        "mixing", f"unknown schedule {schedule!r}; choose one of {', '.join(MIXING_SCHEDULES)}"
    )


def weight_gap(round_index: int, gap: float = 15.0, hold: int = 10, decay: int = 30) -> float:
    """Softmax exponent gap g_t at aggregation round ``t`` (0-based), reference-code schedule.

    ``g_t = gap`` for t < hold, then linear decay ``gap (1 - k/(decay-1))`` for t = hold + k,
    k = 0..decay-1, then 0 (uniform weights). Defaults reproduce the landmine code (uniform from t = 39).
    """
    t = int(round_index)
    if t < hold:
        return float(gap)
    k = t - hold
    if decay > 1 and k < decay:
        return float(gap) * (1.0 - k / (decay - 1))
    return 0.0


def subregion_weights(slot_regions: np.ndarray, subregions: int, gap_value: float) -> np.ndarray:
    """Weights varphi of shape (P, n_slots): ``varphi[i, n] ∝ exp(g 1[region(n) = i])``, rows sum to 1.

    ``slot_regions`` is the public assignment of every *declared* slot; the normaliser runs over the
    declared slots, so the weights do not depend on which agents actually take part.
    """
    regions = np.asarray(slot_regions)
    member = regions[None, :] == np.arange(int(subregions))[:, None]
    logits = gap_value * member
    logits = logits - logits.max(axis=1, keepdims=True)
    w = np.exp(logits)
    return w / w.sum(axis=1, keepdims=True)
