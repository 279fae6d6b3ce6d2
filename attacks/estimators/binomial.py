"""Exact binomial (Clopper-Pearson) bounds and the (epsilon, delta) hypothesis tests built on them.

A *threshold test* is summarised by four integers: ``lower_count`` successes out of ``lower_total``
for the rate bounded from below (the TPR or TNR) and ``upper_count`` out of ``upper_total`` for the
rate bounded from above (the FPR or FNR). At significance ``alpha`` (shared equally by the two
rates) the test certifies ``epsilon >= log((L - delta) / U)``, which is the hypothesis-testing
characterisation of (epsilon, delta)-DP (Kairouz et al. 2015): every rejection region S satisfies
``P_in(S) <= e^eps P_out(S) + delta``.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from accounting.errors import ConfigurationError, require_number


def cp_lower(count, total, alpha):
    """One-sided Clopper-Pearson lower bound on a binomial rate, valid with probability 1 - alpha."""
    count, total = np.asarray(count, dtype=float), np.asarray(total, dtype=float)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=float), np.broadcast(count, total).shape)
    with np.errstate(all="ignore"):
        value = special.betaincinv(np.maximum(count, 1.0), total - count + 1.0, alpha)
    return np.where(count > 0, value, 0.0)


def cp_upper(count, total, alpha):
    """One-sided Clopper-Pearson upper bound on a binomial rate, valid with probability 1 - alpha.

    ``count`` may be an order-statistic rank minus one: the survival probability at the k-th largest
    of n draws is stochastically below Beta(k, n - k + 1), exactly this bound with count = k - 1.
    """
    count, total = np.asarray(count, dtype=float), np.asarray(total, dtype=float)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=float), np.broadcast(count, total).shape)
    with np.errstate(all="ignore"):
        value = special.betainccinv(count + 1.0, np.maximum(total - count, 1.0), alpha)
    return np.where(count < total, value, 1.0)


def threshold_epsilons(lower_count, lower_total, upper_count, upper_total, delta, alpha):
    """Certified epsilon of each threshold test at significance ``alpha`` per test (>= 0, never NaN)."""
    lower = cp_lower(lower_count, lower_total, np.asarray(alpha) / 2)
    upper = cp_upper(upper_count, upper_total, np.asarray(alpha) / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log((lower - delta) / upper)
    return np.where(np.isfinite(eps) & (eps > 0), eps, 0.0), lower, upper


def threshold_p_values(lower_count, lower_total, upper_count, upper_total, epsilon, delta, iterations=56):
    """For each test, the smallest significance at which it rejects "(epsilon, delta)-DP".

    The certified epsilon grows monotonically as alpha grows, so the p-value is found by a vectorised
    bisection on log(alpha). A test that does not reject even at alpha = 1 gets p = 1. The value returned
    is the bracket's rejecting end, never below the exact p-value; 56 halvings of [-700, 0] put it within
    a relative 1e-14 of it.
    """
    shape = np.broadcast(np.asarray(lower_count), np.asarray(upper_count)).shape
    lo = np.full(shape, -700.0)  # log(alpha); exp(-700) ~ 1e-304
    hi = np.zeros(shape)

    def rejects(log_alpha):
        eps, _, _ = threshold_epsilons(lower_count, lower_total, upper_count, upper_total, delta,
                                  np.exp(log_alpha))
        return eps > epsilon

    never = ~rejects(hi)
    always = rejects(lo)
    for _ in range(iterations):
        mid = (lo + hi) / 2
        r = rejects(mid)
        hi = np.where(r, mid, hi)
        lo = np.where(r, lo, mid)
    p = np.exp(hi)
    p = np.where(always, np.exp(-700.0), p)
    return np.where(never, 1.0, p)


def tests_p_value(tests: dict, epsilon: float, delta: float) -> float:
    """Bonferroni p-value of a family of threshold tests stored as ``details["tests"]`` of a bound."""
    p = threshold_p_values(np.asarray(tests["lower_counts"]), np.asarray(tests["lower_totals"]),
                      np.asarray(tests["upper_counts"]), np.asarray(tests["upper_totals"]),
                      epsilon, delta)
    return float(min(1.0, tests["corrected_for"] * float(np.min(p)))) if p.size else 1.0


def check_audit_inputs(scores_out, scores_in, delta, confidence):
    """Validate scores and levels, returning float arrays (ConfigurationError naming the field)."""
    require_number("delta", delta, low=0.0, high=1.0, high_open=True)
    require_number("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    arrays = []
    for name, scores in (("scores_out", scores_out), ("scores_in", scores_in)):
        try:
            array = np.asarray(scores, dtype=float)
            array = array if array.ndim == 1 else array.ravel()  # keep the caller's object (sort cache)
        except (TypeError, ValueError):
            raise ConfigurationError(name, "scores must be numeric") from None
        if array.size == 0:
            raise ConfigurationError(name, "needs at least one score")
        with np.errstate(invalid="ignore", over="ignore"):
            suspicious = not np.isfinite(np.sum(array))       # cheap first check for NaN
        if suspicious and np.isnan(array).any():
            raise ConfigurationError(name, "scores contain NaN")
        arrays.append(array)
    return arrays[0], arrays[1]
