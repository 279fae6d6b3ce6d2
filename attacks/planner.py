"""The planner: what a number of trials can certify, before anything runs.

``trials_needed`` and ``bonferroni_ceiling`` are those of the estimator the audit and ``attack`` run
by default (Clopper-Pearson, Bonferroni over its rank grid of thresholds); a user budgets from these.
The single-threshold figures below (``max_certifiable_epsilon``, ``single_threshold_trials_needed``)
are the floor no estimator can beat.

The single-threshold ceiling is the Clopper-Pearson bound of a *perfect* attack at one threshold fixed in advance:
with N trials per world, no false positive and every canary detected, FPR_ub = 1 - (beta/2)^(1/N)
and TPR_lb = (beta/2)^(1/N) (beta = 1 - confidence), so eps = log((TPR_lb - delta) / FPR_ub). No
Clopper-Pearson audit with N trials per world can certify more (the Bonferroni estimator, which
corrects for its threshold search, certifies somewhat less).
"""

from __future__ import annotations

import math

from accounting.errors import ConfigurationError, require_number

MOST_TRIALS = 2.0**1022  # the doubling search stops here: twice as many no longer converts to a float


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


def perfect_test_ceiling(lower_total: int, upper_total: int, delta: float, alpha: float) -> float:
    """Most one Clopper-Pearson threshold test at significance ``alpha`` can certify: every one of the
    ``lower_total`` trials on the lower-bounded side detected, none of the ``upper_total`` others."""
    log_half = math.log(alpha / 2.0)
    lower = math.exp(log_half / max(1, int(lower_total)))
    upper = -math.expm1(log_half / max(1, int(upper_total)))
    return 0.0 if lower <= delta else max(0.0, math.log((lower - delta) / upper))


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


def counts_ceiling(trials: int, delta: float, confidence: float = 0.95) -> float:
    """The most the Clopper-Pearson estimator of the counts reduction can certify with ``trials`` per world:
    the pilot fixes ``2 * TESTS_PER_DIRECTION`` tests, Bonferroni over them (``attacks.estimators.counts``)."""
    from attacks.estimators.grid import TESTS_PER_DIRECTION

    trials = require_number("trials", trials, low=1, integer=True)
    _check(delta, confidence)
    alpha = (1.0 - float(confidence)) / (2 * TESTS_PER_DIRECTION)
    return perfect_test_ceiling(int(trials), int(trials), float(delta), alpha)


def estimator_ceiling(trials: int, delta: float, confidence: float = 0.95) -> float:
    """The ceiling of the estimator ``attack --reduction auto`` runs at ``trials`` per world: Bonferroni
    over the rank grid on sorted scores up to ``SORTED_MAX_TRIALS``, the pilot's tests on counts above
    (where sorted scores fit in memory; a machine too small for them also switches to counts earlier)."""
    from attacks.run_plan import SORTED_MAX_TRIALS

    if int(trials) <= SORTED_MAX_TRIALS:
        return bonferroni_ceiling(trials, delta, confidence)
    return counts_ceiling(trials, delta, confidence)


def _smallest(reaches, target: float) -> int:
    """Smallest n >= 1 found by doubling then bisection with ``reaches(n) >= target``; the answer always
    satisfies it (bisection only ever moves ``high`` to a budget that reaches the target). A target no
    budget a float can count reaches is a ConfigurationError naming ``target_epsilon``."""
    if reaches(1) >= target:
        return 1
    high = 2
    while reaches(high) < target:
        high *= 2
        if high > MOST_TRIALS:
            raise ConfigurationError(
                "target_epsilon", f"{target:g} needs more than {MOST_TRIALS:.3g} trials per world at this delta "
                "and confidence, even for a perfect attack"
            )
    low = high // 2  # reaches(low) < target <= reaches(high)
    while high - low > 1:
        mid = (low + high) // 2
        if reaches(mid) >= target:
            high = mid
        else:
            low = mid
    return int(high)


def single_threshold_trials_needed(target_epsilon: float, delta: float, confidence: float = 0.95) -> int:
    """Fewest trials per world with which a perfect attack at one threshold fixed in advance certifies
    ``target_epsilon`` at ``delta`` (a floor no estimator can beat; the audit's estimator needs more)."""
    target = require_number("target_epsilon", target_epsilon, low=0.0, low_open=True, high=700.0)
    _check(delta, confidence)
    return _smallest(lambda n: _ceiling(float(n), delta, confidence), target)


def trials_needed(target_epsilon: float, delta: float, confidence: float = 0.95) -> int:
    """Fewest trials per world with which the estimator the audit and ``attack`` run by default
    (``estimator_ceiling``: Bonferroni Clopper-Pearson over its rank grid, or over the pilot's tests of a
    counts reduction above 10^6 trials) certifies ``target_epsilon`` at ``delta`` for a perfect attack:
    the number to budget from."""
    target = require_number("target_epsilon", target_epsilon, low=0.0, low_open=True, high=700.0)
    _check(delta, confidence)
    return _smallest(lambda n: estimator_ceiling(n, delta, confidence), target)
