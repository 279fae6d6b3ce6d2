"""One-run auditing (Steinke, Nasr, Jagielski 2023): many canaries, each included with probability 1/2.

From m canaries the auditor makes r guesses (the rest abstain), v of them correct. Under
(eps, delta)-DP the exact p-value bound of the paper (as also implemented by jax_privacy and Privacy
Meter) is, with q = e^eps / (1 + e^eps),

    p(eps, delta) = min(1, P[Binom(r, q) >= v] + 2 m delta max_{i=1..v} P[v-i <= Binom(r, q) < v] / i),

and the lower bound is the largest eps with p(eps, delta) <= 1 - confidence. Assumes the canaries
were included independently, each with probability 1/2, and the guesses depend only on the output.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

from accounting.errors import require_number
from attacks.estimators.one_run_guesses import TIE_RULE, guess_outcomes, guess_rule_counts
from attacks.estimators.types import EpsilonBound


def one_run_p_value(epsilon: float, delta: float, canaries: int, guesses: int, correct: int) -> float:
    """Exact p-value bound for the null "(epsilon, delta)-DP" given v correct of r guesses, m canaries."""
    if guesses == 0 or correct == 0:
        return 1.0
    q = 1.0 / (1.0 + math.exp(-epsilon))
    beta = float(stats.binom.sf(correct - 1, guesses, q))
    if delta == 0:
        return min(1.0, beta)
    pmf = stats.binom.pmf(np.arange(correct), guesses, q)           # P[B = j], j = 0..v-1
    window = np.cumsum(pmf[::-1])                                    # P[v-i <= B < v], i = 1..v
    alpha = float(np.max(window / np.arange(1, correct + 1)))
    return min(1.0, beta + 2.0 * canaries * delta * alpha)


def _check_counts(canaries, guesses, correct):
    m = int(require_number("canaries", canaries, low=1, integer=True))
    r = int(require_number("guesses", guesses, low=0, high=m, integer=True))
    v = int(require_number("correct", correct, low=0, high=r, integer=True))
    return m, r, v


def one_run_lower_bound(canaries: int, guesses: int, correct: int, delta: float,
                        confidence: float = 0.95, corrected_for: int = 1) -> EpsilonBound:
    """Largest epsilon rejected at ``confidence`` (Bonferroni over ``corrected_for`` guess rules)."""
    m, r, v = _check_counts(canaries, guesses, correct)
    require_number("delta", delta, low=0.0, high=1.0, high_open=True)
    require_number("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    level = (1.0 - confidence) / corrected_for

    def excess(eps):
        return one_run_p_value(eps, delta, m, r, v) - level

    if excess(0.0) > 0:
        eps = 0.0
    else:
        high = 1.0
        while excess(high) <= 0 and high < 700:
            high *= 2.0
        eps = float(optimize.brentq(excess, 0.0, min(high, 700.0), xtol=1e-10)) if excess(high) > 0 else 700.0
    return EpsilonBound(
        method="one-run", epsilon=eps, delta=float(delta), confidence=float(confidence), rigorous=True,
        assumptions="Canaries included independently with probability 1/2 in one run; guesses depend "
                    "only on the output (Steinke, Nasr, Jagielski 2023).",
        details={"canaries": m, "guesses": r, "correct": v, "corrected_for": int(corrected_for),
                 "precision": v / r if r else 0.0},
    )


def one_run_from_scores(scores, included, delta: float, confidence: float = 0.95,
                        guess_counts=None) -> EpsilonBound:
    """One-run bound from per-canary scores: guess "in" for the top k and "out" for the bottom k.

    ``included`` is the boolean inclusion of each canary. ``guess_counts`` lists the numbers of guesses
    r to try (r/2 from each end); the best is kept and the p-value is Bonferroni-corrected over them.
    Guesses depend on the score values only: tied scores are never split by row order
    (``one_run_guesses``).
    """
    m, outcomes = guess_outcomes(scores, included, guess_counts)
    return best_of_rules(one_run_lower_bound, m, outcomes, delta, confidence)


def best_of_rules(bound_from_counts, m: int, outcomes, delta: float, confidence: float) -> EpsilonBound:
    """The largest of ``bound_from_counts`` over the guess rules' outcomes, Bonferroni over all of them;
    its details say how many guesses the rule made (ties abstained) and the tie rule."""
    best = None
    for outcome in outcomes:
        bound = bound_from_counts(m, outcome.guesses, outcome.correct, delta, confidence,
                                  corrected_for=len(outcomes))
        if best is None or bound.epsilon > best.epsilon:
            best = bound
            made = outcome.made
    best.details["guesses_made"] = int(made)
    best.details["tie_rule"] = TIE_RULE
    return best


def one_run_ceiling(canaries: int, delta: float, confidence: float = 0.95, guess_counts=None) -> float:
    """The most ``one_run_from_scores`` can certify with ``canaries`` canaries: every guess correct."""
    counts = guess_rule_counts(int(canaries), guess_counts)
    return max(one_run_lower_bound(canaries, r, r, delta, confidence, corrected_for=len(counts)).epsilon
               for r in counts)
