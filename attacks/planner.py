"""The planner: what a number of trials can certify, before anything runs.

The ceiling is the Clopper-Pearson bound of a *perfect* attack at one threshold fixed in advance:
with N trials per world, no false positive and every canary detected, FPR_ub = 1 - (beta/2)^(1/N)
and TPR_lb = (beta/2)^(1/N) (beta = 1 - confidence), so eps = log((TPR_lb - delta) / FPR_ub). No
Clopper-Pearson audit with N trials per world can certify more (the Bonferroni estimator, which
corrects for its threshold search, certifies somewhat less).
"""

from __future__ import annotations

import math

from accounting.errors import require_number


def _check(delta, confidence):
    require_number("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    require_number("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)


def _ceiling(trials: float, delta: float, confidence: float) -> float:
    log_half_beta = math.log((1.0 - confidence) / 2.0)
    tpr_lower = math.exp(log_half_beta / trials)
    fpr_upper = -math.expm1(log_half_beta / trials)
    if tpr_lower <= delta:
        return 0.0
    return max(0.0, math.log((tpr_lower - delta) / fpr_upper))


def max_certifiable_epsilon(trials: int, delta: float, confidence: float = 0.95) -> float:
    """Largest epsilon any Clopper-Pearson audit with ``trials`` per world can certify at ``delta``."""
    trials = require_number("trials", trials, low=1, integer=True)
    _check(delta, confidence)
    return _ceiling(float(trials), float(delta), float(confidence))


def bonferroni_ceiling(trials: int, delta: float, confidence: float = 0.95,
                       candidates: int | None = None) -> float:
    """The most the default (Bonferroni) Clopper-Pearson estimator can certify with ``trials`` per world.

    It runs 2 x len(rank grid) tests, each at significance (1 - confidence) / (number of tests), so its
    perfect-attack ceiling is the single-test ceiling at that stricter level.
    """
    from attacks.estimators.clopper_pearson import DEFAULT_CANDIDATES
    from attacks.estimators.thresholds import rank_grid

    trials = require_number("trials", trials, low=1, integer=True)
    _check(delta, confidence)
    tests = 2 * rank_grid(int(trials), candidates or DEFAULT_CANDIDATES).size
    return _ceiling(float(trials), float(delta), 1.0 - (1.0 - float(confidence)) / tests)


def noise_fraction_power(probe, trials: int, claim_epsilon: float, delta: float, confidence: float = 0.95):
    """What ``trials`` per world of ``probe`` would refute against a claim: the largest fraction f of the
    configured noise whose implementation is refuted with probability 0.9, and the trials that refute
    f = 0.5 (``attacks.power.Power``; None when the probe reduces to no Gaussian mechanism)."""
    from attacks.power import probe_power

    return probe_power(probe, int(trials), claim_epsilon, delta, confidence)


def trials_needed(target_epsilon: float, delta: float, confidence: float = 0.95) -> int:
    """Fewest trials per world with which a perfect attack certifies ``target_epsilon`` at ``delta``."""
    target = require_number("target_epsilon", target_epsilon, low=0.0, low_open=True, high=700.0)
    _check(delta, confidence)
    if _ceiling(1.0, delta, confidence) >= target:
        return 1
    high = 2
    while _ceiling(float(high), delta, confidence) < target:
        high *= 2
    low = high // 2  # ceiling(low) < target <= ceiling(high)
    while high - low > 1:
        mid = (low + high) // 2
        if _ceiling(float(mid), delta, confidence) >= target:
            high = mid
        else:
            low = mid
    return int(high)
