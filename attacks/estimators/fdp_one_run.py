"""One-run auditing of Gaussian f-DP (Mahloujifar, Melis, Chaudhuri, ICML 2025, "Auditing f-differential
privacy in one run").

Setting as in Steinke et al. (``one_run``): m canaries, each included independently with probability
1/2 in one run; the auditor guesses the inclusion of r of them (abstaining on the rest) and v guesses
are correct. Where Steinke et al. bound the number of correct guesses through (eps, delta)-DP, this
bound uses the whole trade-off function f of the mechanism. Here f is Gaussian, f = G_mu: any event A
of probability x under one neighbouring world has probability at least ``g_mu(x) = Phi(Phi^-1(x) - mu)``
under the other. The paper's test of "the mechanism is f-DP with respect to every canary" at level tau
runs a recursion over the correct guesses i = v-1, ..., 0, starting from r_v = tau v / m and
h_v = tau (r - v) / m::

    h_i = max(h_{i+1}, g_mu(r_{i+1}))
    r_i = r_{i+1} + i / (r - i) * (h_i - h_{i+1})

and rejects ("P[at least v correct] <= tau") when r_0 + h_0 > r / m. The lower bound on mu is the
largest mu rejected at level tau; it is turned into an epsilon at ``delta`` through the mu-GDP privacy
profile (``accounting.exact.gaussian_epsilon``). Rejecting mu-GDP rejects (eps(mu), delta)-DP only if
the mechanism's trade-off curve is Gaussian-shaped, so the epsilon is labelled model-based
(``rigorous=False``), like the multi-run GDP estimator; the test of mu itself assumes only the
independent inclusion of the canaries and guesses that depend on the output alone.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from accounting.errors import ConfigurationError, require_number
from accounting.exact import gaussian_epsilon
from attacks.estimators.types import EpsilonBound

MU_MAX = 60.0      # beyond this every Gaussian mechanism is practically non-private at any usable delta
GRID_POINTS = 128  # mu values tested at once per refinement pass


def gaussian_lower_probability(x, mu):
    """Phi(Phi^-1(x) - mu): the least probability an event of probability x can have in the other world."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return special.ndtr(special.ndtri(np.clip(x, 0.0, 1.0)) - mu)


def fdp_rejects(mu, canaries: int, guesses: int, correct: int, level: float) -> np.ndarray:
    """For each mu (array), whether ``correct`` of ``guesses`` correct guesses among ``canaries``
    canaries reject "the mechanism is mu-GDP with respect to each canary" at significance ``level``."""
    mu = np.atleast_1d(np.asarray(mu, dtype=float))
    m, r, v = int(canaries), int(guesses), int(correct)
    if v == 0 or r == 0:
        return np.zeros(mu.shape, dtype=bool)
    scale = level * r / m
    right = np.full(mu.shape, scale * v / r)        # r_v
    wrong = np.full(mu.shape, scale * (r - v) / r)  # h_v
    for i in range(v - 1, -1, -1):
        new_wrong = np.maximum(wrong, gaussian_lower_probability(right, mu))
        if np.array_equal(new_wrong, wrong):
            break  # h unchanged for every mu: neither h nor r changes again
        right = right + (i / (r - i)) * (new_wrong - wrong)
        wrong = new_wrong
    return right + wrong > r / m


def fdp_mu_lower_bound(canaries: int, guesses: int, correct: int, level: float, passes: int = 3) -> float:
    """Largest mu in [0, MU_MAX] rejected at ``level`` (0.0 when none is): a grid refined ``passes`` times.

    Rejection is monotone in mu (a larger mu lowers g_mu, so the recursion accumulates less), so the
    rejected values form an interval [0, mu*); the bound returned is the largest grid point rejected.
    """
    low, high = 0.0, MU_MAX
    best = 0.0
    for _ in range(passes):
        grid = np.linspace(low, high, GRID_POINTS)
        rejected = fdp_rejects(grid, canaries, guesses, correct, level)
        if not rejected.any():
            return best
        j = int(np.flatnonzero(rejected).max())
        best = float(grid[j])
        if j == grid.size - 1:
            return best
        low, high = grid[j], grid[j + 1]
    return best


def fdp_one_run_lower_bound(canaries: int, guesses: int, correct: int, delta: float,
                            confidence: float = 0.95, corrected_for: int = 1) -> EpsilonBound:
    """Gaussian f-DP one-run bound from counts (Bonferroni over ``corrected_for`` guess rules)."""
    m = int(require_number("canaries", canaries, low=1, integer=True))
    r = int(require_number("guesses", guesses, low=0, high=m, integer=True))
    v = int(require_number("correct", correct, low=0, high=r, integer=True))
    require_number("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    require_number("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    mu = fdp_mu_lower_bound(m, r, v, (1.0 - confidence) / corrected_for)
    return EpsilonBound(
        method="fdp-one-run", epsilon=gaussian_epsilon(mu, delta) if mu > 0 else 0.0, delta=float(delta),
        confidence=float(confidence), rigorous=False,
        assumptions="Model-based: canaries included independently with probability 1/2 in one run and "
                    "guesses depending only on the output reject mu-GDP (Mahloujifar et al. 2025); the "
                    "step from mu to epsilon assumes a Gaussian trade-off curve.",
        details={"canaries": m, "guesses": r, "correct": v, "corrected_for": int(corrected_for),
                 "mu_lower_bound": mu, "precision": v / r if r else 0.0},
    )


def guess_rule_counts(m: int, guess_counts=None) -> list[int]:
    """The numbers of guesses to try (default: about 12 even counts, geometrically spaced from 2 to m, none above
    m: rounding 2 (m / 2) to an even count gave m + 1 for m = 3 mod 4, refused below)."""
    if guess_counts is None:
        even = np.maximum(np.round(np.geomspace(2, m, 12) / 2).astype(int) * 2, 2)
        guess_counts = np.unique(np.minimum(even, m))
    return [int(require_number("guess_counts", g, low=1, high=m, integer=True)) for g in guess_counts]


def guess_outcomes(scores, included, guess_counts=None) -> tuple[int, list[tuple[int, int]]]:
    """(m, [(r, correct), ...]): for each r, "in" for the r - r//2 highest scores, "out" for the r//2 lowest."""
    scores = np.asarray(scores, dtype=float).ravel()
    included = np.asarray(included, dtype=bool).ravel()
    if scores.size != included.size or scores.size == 0:
        raise ConfigurationError("included", "needs one inclusion flag per canary score")
    m = scores.size
    ranked = included[np.argsort(scores, kind="stable")]
    out = []
    for r in guess_rule_counts(m, guess_counts):
        k_out, k_in = r // 2, r - r // 2
        correct = int(np.count_nonzero(ranked[m - k_in:])) + int(np.count_nonzero(~ranked[:k_out]))
        out.append((r, correct))
    return m, out


def fdp_one_run_from_scores(scores, included, delta: float, confidence: float = 0.95,
                            guess_counts=None) -> EpsilonBound:
    """The f-DP one-run bound from per-canary scores (the best guess rule, Bonferroni over all tried)."""
    m, outcomes = guess_outcomes(scores, included, guess_counts)
    best = None
    for r, correct in outcomes:
        bound = fdp_one_run_lower_bound(m, r, correct, delta, confidence, corrected_for=len(outcomes))
        if best is None or bound.epsilon > best.epsilon:
            best = bound
    return best
