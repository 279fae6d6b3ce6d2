"""The power of an audit: which under-noised implementations its budget would refute.

A probe reduces (``probe.mechanism()``) to a composition of Gaussian or subsampled-Gaussian releases
with noise multipliers z_i. An implementation that adds only a fraction ``f`` of the configured noise
releases the same composition with multipliers ``f z_i``. We model the probe's score as the
likelihood-ratio test of that composition in Gaussian-DP form: ``mu = sqrt(sum_i n_i (s_i/sigma_i)^2)``
exactly when every rate is 1 (scores N(0, 1) out, N(mu, 1) in; exact for probes whose score is linear
in the releases, such as the FedZero probes at rate 1), and the central-limit approximation
``mu = sqrt(sum_i n_i q_i^2 (e^{(s_i/sigma_i)^2} - 1))`` of Dong, Roth and Su (2019, "Gaussian
differential privacy", Cor. 5.4) when some rate is below 1 (``method`` says which). Laplace parts have
no Gaussian reduction: no power is claimed for them.

The estimator is the one the audits run: Clopper-Pearson on order-statistic thresholds of a rank grid,
Bonferroni-corrected (``attacks.estimators.clopper_pearson``). At rank k of the in-high direction the
FPR bound U_k is fixed; the test refutes a claim eps iff TP >= c_k, the least count whose
Clopper-Pearson lower bound exceeds delta + e^eps U_k. The threshold's true FPR u is Beta(k, N-k+1)
(the k-th largest of N continuous scores) and TP ~ Bin(N, Phi(mu + Phi^{-1}(u))), so
P_k = E_u P(Bin >= c_k) is computed by quadrature over u. The estimator refutes when any of its tests
does, so ``max_k P_k`` is a lower bound on the power (the out-low direction, which is symmetric for a
Gaussian shift, only adds to it). ``tests/attacks/test_power.py`` checks it against a simulation.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from attacks.estimators.binomial import cp_lower, cp_upper

PROBABILITY = 0.9  # the power the planner budgets for
HALF_NOISE = 0.5  # the noise fraction bundled audits must detect
QUADRATURE = 256  # Beta quantiles per rank
MAX_TRIALS = 10**10


@dataclass(frozen=True)
class Reduction:
    """The Gaussian-DP reduction of a probe's composition: the ``mu`` of the configured noise and how."""

    mu: float
    method: str  # "gdp-exact" (all rates 1) | "gdp-clt" (central-limit approximation)
    parts: tuple  # ((sensitivity / noise std, rate, count), ...)

    def mu_at(self, fraction: float) -> float:
        """The reduction's mu when only ``fraction`` of the configured noise is added."""
        if self.method == "gdp-exact":
            return self.mu / fraction
        total = sum(n * q * q * math.expm1(min((r / fraction) ** 2, 700.0)) for r, q, n in self.parts)
        return math.sqrt(total)


def reduce_composition(composition) -> Reduction | None:
    """The ``Reduction`` of a Composition (or mechanism), None when a part is not Gaussian."""
    from accounting.mechanisms import Gaussian, SubsampledGaussian, as_composition

    parts = []
    for mechanism, count in as_composition(composition).parts:
        if isinstance(mechanism, Gaussian):
            parts.append((1.0 / float(mechanism.noise_multiplier), 1.0, count))
        elif isinstance(mechanism, SubsampledGaussian):
            parts.append((mechanism.sensitivity / mechanism.noise_std, float(mechanism.rate), count))
        else:
            return None
    exact = all(q == 1.0 for _, q, _ in parts)
    reduction = Reduction(0.0, "gdp-exact" if exact else "gdp-clt", tuple(parts))
    if exact:
        return Reduction(math.sqrt(sum(n * r * r for r, _, n in parts)), "gdp-exact", tuple(parts))
    return Reduction(reduction.mu_at(1.0), "gdp-clt", tuple(parts))


def _rank_power(mu: float, trials: int, rank: int, threshold: float, alpha_each: float, nodes) -> float:
    """P(the in-high test at ``rank`` refutes): TP >= c where cp_lower(c) > ``threshold``."""
    return float(_rank_powers(mu, trials, np.array([rank]), np.array([threshold]), alpha_each, nodes)[0])


def _rank_powers(mu: float, trials: int, ranks, thresholds, alpha_each: float, nodes) -> np.ndarray:
    """``_rank_power`` of every rank at once (ranks and thresholds are arrays of one length)."""
    needed = _least_counts(trials, thresholds, alpha_each)
    out = np.zeros(len(ranks))
    some = needed > 0
    if not some.any():
        return out
    ranks = np.asarray(ranks, dtype=float)[some, None]
    u = stats.beta.ppf(nodes[None, :], ranks, trials - ranks + 1)
    tpr = stats.norm.cdf(mu + stats.norm.ppf(np.clip(u, 1e-300, 1.0)))
    out[some] = np.mean(stats.binom.sf(needed[some, None] - 1, trials, tpr), axis=1)
    return out


def _least_counts(trials: int, thresholds, alpha_each: float) -> np.ndarray:
    """For each threshold, the least count whose Clopper-Pearson lower bound exceeds it, by one bisection over
    all of them (0 where no count does)."""
    thresholds = np.asarray(thresholds, dtype=float)
    reachable = cp_lower(trials, trials, alpha_each / 2) > thresholds
    low, high = np.zeros(thresholds.shape, dtype=np.int64), np.full(thresholds.shape, int(trials), dtype=np.int64)
    while np.any(high - low > 1):  # cp_lower(low) <= threshold < cp_lower(high)
        mid = (low + high) // 2
        above = cp_lower(mid, trials, alpha_each / 2) > thresholds
        high, low = np.where(above, mid, high), np.where(above, low, mid)
    return np.where(reachable, high, 0)


def refutation_probability(mu: float, trials: int, claim_epsilon: float, delta: float,
                           confidence: float = 0.95, candidates: int | None = None) -> float:
    """Lower bound on the probability that the default Clopper-Pearson estimator with ``trials`` per world
    certifies more than ``claim_epsilon`` against scores N(0, 1) (out) and N(mu, 1) (in)."""
    from attacks.estimators.clopper_pearson import DEFAULT_CANDIDATES
    from attacks.estimators.thresholds import rank_grid

    trials = int(trials)
    ranks = rank_grid(trials, candidates or DEFAULT_CANDIDATES)
    alpha_each = (1.0 - confidence) / (2 * ranks.size)
    nodes = (np.arange(QUADRATURE) + 0.5) / QUADRATURE
    thresholds = delta + math.exp(claim_epsilon) * cp_upper(ranks - 1, trials, alpha_each / 2)
    below = thresholds < 1.0
    if not below.any():
        return 0.0
    return float(np.max(_rank_powers(mu, trials, ranks[below], thresholds[below], alpha_each, nodes)))


def trials_for_power(mu: float, claim_epsilon: float, delta: float, confidence: float = 0.95,
                     probability: float = PROBABILITY, max_trials: int = MAX_TRIALS) -> int | None:
    """Fewest trials per world (to within 2%) at which ``refutation_probability`` reaches ``probability``;
    None when even ``max_trials`` do not."""

    def enough(n):
        return refutation_probability(mu, n, claim_epsilon, delta, confidence) >= probability

    high = 100
    while not enough(high):
        if high >= max_trials:
            return None
        high = min(high * 4, max_trials)
    low = max(1, high // 4)
    while high - low > 1 and high > 1.02 * low:
        mid = min(high - 1, max(low + 1, int(math.sqrt(low * high))))
        if enough(mid):
            high = mid
        else:
            low = mid
    return int(high)


def refuted_fraction(reduction: Reduction, trials: int, claim_epsilon: float, delta: float,
                     confidence: float = 0.95, probability: float = PROBABILITY) -> float:
    """Largest noise fraction f (to 0.01) refuted with ``probability`` at ``trials``; 0 when none is."""

    def refuted(f):
        return refutation_probability(reduction.mu_at(f), trials, claim_epsilon, delta, confidence) >= probability

    if not refuted(0.01):
        return 0.0
    if refuted(1.0):
        return 1.0
    low, high = 0.01, 1.0
    while high - low > 0.005:
        mid = (low + high) / 2
        low, high = (mid, high) if refuted(mid) else (low, mid)
    return round(low, 3)


@dataclass(frozen=True)
class Power:
    """What an audit of ``trials`` per world would refute, with probability ``probability``."""

    trials: int
    probability: float
    refuted_fraction: float  # an implementation adding this fraction of the noise, or less, is refuted
    half_noise_trials: int | None  # trials per world that refute f = 0.5 with ``probability``
    method: str
    mu: float

    def sentence(self) -> str:
        half = ("no budget up to 1e10 trials refutes half the noise" if self.half_noise_trials is None
                else f"half the noise needs {self.half_noise_trials:.3g} trials per world")
        if self.refuted_fraction <= 0:
            return (f"at {self.trials:.3g} trials per world this probe would not refute even an implementation "
                    f"adding 0.01 of the configured noise with probability {self.probability:g} ({half})")
        return (f"would refute an implementation adding {self.refuted_fraction:.2f} of the configured noise "
                f"or less, with probability {self.probability:g} ({half}; {self.method})")

    def to_dict(self) -> dict:
        return dict(asdict(self), sentence=self.sentence())


def probe_power(probe, trials: int, claim_epsilon: float, delta: float, confidence: float = 0.95,
                probability: float = PROBABILITY) -> Power | None:
    """The ``Power`` of ``trials`` per world of ``probe`` against a claim; None when the probe has no
    Gaussian reduction (non-private, Laplace) or no claim."""
    own = getattr(probe, "simulated_power", None)  # a probe whose test the Gaussian-DP model misstates
    if own is not None and claim_epsilon is not None and math.isfinite(claim_epsilon):
        return own(int(trials), claim_epsilon, delta, confidence, probability)
    composition = probe.mechanism() if hasattr(probe, "mechanism") else None
    reduction = None if composition is None else reduce_composition(composition)
    if reduction is None or claim_epsilon is None or not math.isfinite(claim_epsilon):
        return None
    fraction = refuted_fraction(reduction, trials, claim_epsilon, delta, confidence, probability)
    half = trials_for_power(reduction.mu_at(HALF_NOISE), claim_epsilon, delta, confidence, probability)
    return Power(int(trials), probability, fraction, half, reduction.method, reduction.mu)
