"""The Gaussian view of one-run auditing (after Agrawal et al. 2026, "Let's Ask Gauss: Improved One-Run Privacy
Auditing"): a GDP parameter mu from the canary-aligned signals themselves, not from thresholded guesses.

m canaries, each included by an independent fair coin; per canary a continuous signal s_i that depends on the output
alone (``dpfed.dpsgd.loop_canaries``: its log-likelihood ratio). The signed sum of the signals, standardized,

    d = (mean of s over included - mean over excluded) / pooled sd,    t = d / sqrt(1/m_in + 1/m_out),

estimates mu. **Model (what makes the bound exact):** each canary's signal is a Gaussian shift, N(0, sigma^2) when
excluded and N(mu sigma, sigma^2) when included, independent across canaries (any sigma). Then t is noncentral t
with m - 2 degrees of freedom and noncentrality mu / sqrt(1/m_in + 1/m_out), and inverting it gives a lower
confidence bound on mu that holds exactly in finite samples (``mu_lower_bound``). The signal is a post-processing of
the output, so a mechanism whose canary signals are such shifts is no better than mu-GDP towards each canary: its
epsilon at delta is at least the mu-GDP one (the closed-form hockey-stick divergence between N(0, 1) and N(mu, 1),
``accounting.exact.gaussian_epsilon``).

**Where the model does not hold** (a subsampled canary's log-likelihood ratio is a skewed mixture, not a shift; a
pure-DP mechanism's signal is two-valued) the mu bound is only asymptotic (the t statistic's normal limit over m
canaries) and the step from mu to epsilon is model-based: the +-1 signal of randomized response, an eps-DP
mechanism, has d -> 2 sinh(eps / 2) (1.04 at eps = 1), whose mu-GDP epsilon at delta 1e-5 is 4.59, not 1. So
the bound is reported with ``rigorous=False``: it never decides a verdict (``one_run_weighted`` is the rigorous use
of the same signals). On null runs (signals independent of the coins) t is a two-sample t statistic of exchangeable
groups, and the bound is 0 with probability about ``confidence`` (exactly so for Gaussian signals).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from accounting.errors import require_number
from accounting.exact import gaussian_epsilon
from attacks.estimators.one_run_weighted import check_signals
from attacks.estimators.types import EpsilonBound

MU_MAX = 60.0  # as in fdp_one_run: beyond it every Gaussian mechanism is practically non-private

ASSUMPTIONS = ("Model-based (the Gaussian view of one-run auditing): exact if each canary's signal is a Gaussian "
               "shift (N(0, s^2) out, N(mu s, s^2) in, independent canaries): mu is then bounded by inverting the "
               "noncentral t of the standardized signed sum of signals, and epsilon is mu-GDP's; otherwise the mu "
               "bound is asymptotic and the step to epsilon assumes a Gaussian trade-off curve.")


def standardized_difference(signals, included):
    """``(d, t, m_in, m_out)`` along the last axis (so many runs at once: arrays of shape (runs, m)): the mean
    difference of included and excluded signals over their pooled sd, and the two-sample t statistic; nan where a
    group is empty or the pooled sd is 0."""
    s = np.asarray(signals, dtype=float)
    inc = np.broadcast_to(np.asarray(included, dtype=bool), s.shape)
    n_in, n_out = inc.sum(axis=-1), (~inc).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_in = np.where(inc, s, 0.0).sum(axis=-1) / n_in
        mean_out = np.where(inc, 0.0, s).sum(axis=-1) / n_out
        centred = s - np.where(inc, mean_in[..., None], mean_out[..., None])
        pooled = np.sqrt((centred ** 2).sum(axis=-1) / (n_in + n_out - 2))
        d = np.where(pooled > 0, (mean_in - mean_out) / pooled, np.nan)
        t = d / np.sqrt(1.0 / n_in + 1.0 / n_out)
    return d, t, n_in, n_out


def mu_lower_bound(t, n_in, n_out, confidence: float = 0.95, iterations: int = 60) -> np.ndarray:
    """The smallest mu not rejected at ``1 - confidence`` given the t statistic (vectorised): under the Gaussian
    shift model P[t >= observed] grows with the noncentrality mu / sqrt(1/m_in + 1/m_out); 0 where t is not finite
    or not above the central t quantile (no evidence). Bisection keeps the side whose mu is rejected."""
    alpha = 1.0 - require_number("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    t, n_in, n_out = np.broadcast_arrays(np.asarray(t, float), np.asarray(n_in, float), np.asarray(n_out, float))
    df = n_in + n_out - 2
    usable = np.isfinite(t) & (n_in >= 1) & (n_out >= 1) & (df >= 1)
    t_, df_ = np.where(usable, t, 0.0), np.where(usable, df, 1.0)
    usable &= stats.t.sf(t_, df_) < alpha
    low, high = np.zeros(t_.shape), 2.0 * np.abs(t_) + 10.0  # in noncentrality units; high is far from rejected
    for _ in range(iterations):
        middle = (low + high) / 2
        rejected = stats.nct.sf(t_, df_, middle) < alpha
        low, high = np.where(rejected, middle, low), np.where(rejected, high, middle)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.sqrt(1.0 / np.where(usable, n_in, 1.0) + 1.0 / np.where(usable, n_out, 1.0))
    return np.where(usable, np.minimum(low * scale, MU_MAX), 0.0)


def one_run_gauss_from_scores(signals, included, delta: float, confidence: float = 0.95) -> EpsilonBound:
    """Model-based one-run lower bound on epsilon at ``delta`` from per-canary signals and inclusion coins
    (module docstring): the mu-GDP epsilon of the lower confidence bound on mu."""
    signals, included = check_signals(signals, included)
    require_number("delta", delta, low=0.0, high=1.0, high_open=True)
    require_number("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    d, t, n_in, n_out = standardized_difference(signals, included)
    mu = float(mu_lower_bound(t, n_in, n_out, confidence))
    eps = gaussian_epsilon(mu, float(delta)) if mu > 0 else 0.0
    return EpsilonBound(
        method="one-run-gauss", epsilon=eps, delta=float(delta), confidence=float(confidence), rigorous=False,
        assumptions=ASSUMPTIONS,
        details={"canaries": int(signals.size), "included": int(n_in), "mu_lower_bound": mu,
                 "mu_estimate": float(d) if np.isfinite(d) else 0.0,
                 "t_statistic": float(t) if np.isfinite(t) else 0.0})


__all__ = ["MU_MAX", "mu_lower_bound", "one_run_gauss_from_scores", "standardized_difference"]
