"""One-run auditing with the guess rule chosen on held-out canaries, the median over several splits.

Setting as in ``one_run`` (Steinke, Nasr, Jagielski 2023) and ``fdp_one_run`` (Mahloujifar et al. 2025).
Each of ``splits`` splits draws a random held-out part H (each canary with probability ``holdout``,
from ``seed``, independently of scores and labels). On H alone (its scores and inclusions) the rule is
chosen: score-VALUE thresholds "in when score >= high" and "out when score <= low" (one-sided, or
symmetric two-sided, at about ``SELECTION_POINTS`` guess counts each), the one whose bound on H is
largest. The rule is then applied once to the audited part A (the other canaries): a single rule, so
no Bonferroni correction, and the bound uses A's canaries only (m = |A|). Thresholds are values, so
tied scores always get the same guess. The split does not depend on row order either: the canaries are
first ordered by (score, inclusion) and the held-out flags, independent fair draws, are laid on that
order. Independent flags are exchangeable, so the held-out set is distributed exactly as a random
subset drawn independently of the labels, and the result is a function of the multiset of (score,
inclusion) pairs and ``seed`` alone.

Why this is valid: H's inclusions are independent of A's, so given H's data the rule is fixed and the
count-based test on A is exact at its level. Each split's bound is taken at level (1 - confidence)/2
and the estimate is the ceil(K/2)-th largest of the K bounds: "at least half of K p-values are at most
alpha/2" has probability at most alpha whatever their dependence (Markov's inequality on the
fraction; Meinshausen, Meier, Buehlmann 2009, Theorem 3.1 with gamma = 1/2).
"""

from __future__ import annotations

import numpy as np

from accounting.errors import ConfigurationError, require_number
from attacks.estimators.fdp_one_run import fdp_one_run_lower_bound
from attacks.estimators.one_run import one_run_lower_bound
from attacks.estimators.types import EpsilonBound

SPLITS = 11
HOLDOUT = 0.3
SELECTION_POINTS = 16
METHOD_NAMES = {False: "one-run-split-median", True: "fdp-one-run-split-median"}


def rule_outcome(scores, included, low: float, high: float) -> tuple[int, int]:
    """(guesses, correct) of "in when score >= high, out when score <= low" (low < high)."""
    guess_in, guess_out = scores >= high, scores <= low
    return (int(np.count_nonzero(guess_in) + np.count_nonzero(guess_out)),
            int(np.count_nonzero(guess_in & included) + np.count_nonzero(guess_out & ~included)))


def candidate_rules(scores) -> list[tuple[float, float]]:
    """(low, high) value thresholds: the top 2k guessed in, or the bottom k out and the top k in."""
    ordered = np.sort(scores)
    m = ordered.size
    rules = []
    for k in np.unique(np.geomspace(1, max(1, m // 2), SELECTION_POINTS).astype(int)):
        rules.append((-np.inf, float(ordered[m - 2 * k])))
        if ordered[k - 1] < ordered[m - k]:
            rules.append((float(ordered[k - 1]), float(ordered[m - k])))
    return rules


def choose_rule(scores, included, bound, delta: float, level: float) -> tuple[float, float]:
    """The candidate rule whose bound on these (held-out) canaries at ``level`` is largest."""
    best, best_eps = None, -1.0
    for low, high in candidate_rules(scores):
        r, v = rule_outcome(scores, included, low, high)
        eps = bound(scores.size, r, v, delta, 1.0 - level).epsilon
        if eps > best_eps:
            best, best_eps = (low, high), eps
    return best


def split_median_p_value(details: dict, claim_epsilon: float, claim_delta: float) -> float:
    """A valid p-value for "(claim_epsilon, claim_delta)-DP" from a rigorous split-median bound's details: twice
    the ceil(K/2)-th smallest of the K splits' one-run p-values (Meinshausen et al. 2009 with gamma = 1/2; the
    bound exceeds the claim exactly when this is at most 1 - confidence)."""
    from attacks.estimators.one_run import one_run_p_value

    p_values = sorted(1.0 if counts is None else one_run_p_value(claim_epsilon, claim_delta, *counts)
                      for counts in details["split_counts"])
    if len(p_values) == 1:
        return p_values[0]
    return min(1.0, 2.0 * p_values[details["median_rank"] - 1])


def split_median_from_scores(scores, included, delta: float, confidence: float = 0.95, fdp: bool = False,
                             splits: int = SPLITS, holdout: float = HOLDOUT, seed: int = 0) -> EpsilonBound:
    """The one-run (``fdp=False``, rigorous) or Gaussian f-DP (model-based) bound, median over splits."""
    scores = np.asarray(scores, dtype=float).ravel()
    included = np.asarray(included, dtype=bool).ravel()
    if scores.size != included.size or scores.size < 4:
        raise ConfigurationError("included", "needs one inclusion flag per canary score, and 4 canaries or more")
    splits = int(require_number("splits", splits, low=1, integer=True))
    require_number("holdout", holdout, low=0.0, high=1.0, low_open=True, high_open=True)
    require_number("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    order = np.lexsort((included, scores))          # by score, then inclusion: no dependence on row order
    scores, included = scores[order], included[order]
    bound = fdp_one_run_lower_bound if fdp else one_run_lower_bound
    alpha = 1.0 - confidence
    level = alpha / 2.0 if splits > 1 else alpha
    gen = np.random.default_rng(int(seed))
    results = []
    for _ in range(splits):
        held = gen.random(scores.size) < holdout
        if held.all() or not held.any():
            results.append(None)
            continue
        low, high = choose_rule(scores[held], included[held], bound, delta, alpha)
        audited_scores, audited_included = scores[~held], included[~held]
        r, v = rule_outcome(audited_scores, audited_included, low, high)
        results.append((bound(audited_scores.size, r, v, delta, 1.0 - level), low, high))
    epsilons = [0.0 if res is None else res[0].epsilon for res in results]
    rank = np.argsort(epsilons, kind="stable")[::-1][(splits + 1) // 2 - 1]  # ceil(K/2)-th largest
    chosen = results[rank]
    details = {"splits": splits, "holdout": float(holdout), "seed": int(seed), "level_per_split": level,
               "split_epsilons": [float(e) for e in epsilons], "median_rank": (splits + 1) // 2,
               "split_counts": [None if res is None else [res[0].details[k] for k in ("canaries", "guesses", "correct")]
                                for res in results]}
    if chosen is not None:
        inner, low, high = chosen
        details.update({key: inner.details[key] for key in ("canaries", "guesses", "correct", "precision")})
        if fdp:
            details["mu_lower_bound"] = inner.details["mu_lower_bound"]
        details["rule"] = {"in_when_score_at_least": high,
                           "out_when_score_at_most": None if low == -np.inf else low}
    base = fdp_one_run_lower_bound(4, 0, 0, delta, confidence) if fdp else one_run_lower_bound(4, 0, 0, delta,
                                                                                               confidence)
    return EpsilonBound(
        method=METHOD_NAMES[fdp], epsilon=epsilons[rank], delta=float(delta), confidence=float(confidence),
        rigorous=not fdp,
        assumptions=f"{base.assumptions} Guess rule chosen on a random {holdout:.0%} of the canaries and tested "
                    f"on the rest; the {(splits + 1) // 2}-th largest of {splits} splits' bounds, each at level "
                    "(1 - confidence)/2 (valid for any dependence between splits).",
        details=details,
    )
