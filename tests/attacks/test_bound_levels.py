"""Every printed bound holds at the confidence printed beside it, and a verdict's reason names the test that decided it.

Several rigorous estimators run at their share of the level (Bonferroni, as the verdict's p-values are combined), so
the largest of their bounds holds at the confidence asked for; a VIOLATION's reason names the estimator whose test
rejected the claim; the weighted one-run bound no longer reads 0 where m delta / 2 >= 1 - confidence while its test
of a claim still rejects."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from attacks.estimators import METHODS, RIGOROUS_METHODS, estimate_all, estimate_one_run, rigorous_confidence
from attacks.estimators.clopper_pearson import clopper_pearson_lower_bound
from attacks.estimators.one_run_weighted import one_run_weighted_from_scores, start_epsilon
from attacks.estimators.types import EpsilonBound
from attacks.verdict import VIOLATION, decide

DELTA = 1e-5


def _gaussian_worlds(mu: float, trials: int, seed: int):
    rng = np.random.default_rng(seed)
    return rng.normal(size=trials), rng.normal(mu, 1.0, size=trials)


def test_the_split_is_bonferronis():
    assert rigorous_confidence(0.95, ["clopper-pearson"]) == 0.95
    assert rigorous_confidence(0.95, ["clopper-pearson", "gdp", "bayesian-jeffreys"]) == 0.95
    assert rigorous_confidence(0.95, ["clopper-pearson", "clopper-pearson-split"]) == pytest.approx(0.975)
    assert rigorous_confidence(0.9, ["one-run", "one-run-weighted", "one-run-split-median"]) == pytest.approx(
        1 - 0.1 / 3)


def test_every_estimator_is_labelled_as_the_split_counts_it():
    out_scores, in_scores = _gaussian_worlds(2.0, 200, 1)
    for bound in estimate_all(out_scores, in_scores, DELTA, methods=METHODS):
        assert bound.rigorous == (bound.method in RIGOROUS_METHODS), bound.method
    rng = np.random.default_rng(2)
    included = rng.random(100) < 0.5
    scores = rng.normal(size=100) + 2.0 * included
    from attacks.estimators import ONE_RUN_METHODS

    for bound in estimate_one_run(scores, included, DELTA, methods=ONE_RUN_METHODS):
        assert bound.rigorous == (bound.method in RIGOROUS_METHODS), bound.method


def test_two_rigorous_bounds_each_at_half_the_level_and_the_others_at_the_level_asked():
    out_scores, in_scores = _gaussian_worlds(3.0, 2000, 3)
    bounds = {b.method: b for b in estimate_all(out_scores, in_scores, DELTA, 0.95, methods=METHODS, rng=7)}
    single = clopper_pearson_lower_bound(np.sort(out_scores), np.sort(in_scores), DELTA, 0.975)
    assert bounds["clopper-pearson"].confidence == pytest.approx(0.975)
    assert bounds["clopper-pearson"].epsilon == pytest.approx(single.epsilon, rel=1e-12)
    assert bounds["clopper-pearson-split"].confidence == pytest.approx(0.975)
    for name in ("bayesian-jeffreys", "gdp"):
        assert bounds[name].confidence == 0.95 and not bounds[name].rigorous
    for name in ("clopper-pearson", "clopper-pearson-split"):
        assert bounds[name].details["joint_confidence"] == 0.95 and bounds[name].details["split_over"] == 2
    # one rigorous estimator: its bound at the level asked, unchanged
    [alone] = [b for b in estimate_all(out_scores, in_scores, DELTA, 0.95) if b.rigorous]
    assert alone.confidence == 0.95 and "split_over" not in alone.details


def test_the_best_rigorous_bound_and_the_verdict_agree_on_every_claim():
    """The verdict combines the rigorous p-values by Bonferroni; the bounds are at the same split level, so a claim
    below the largest rigorous bound is a VIOLATION and one above it is not (claims within 1% of it skipped: the
    bound is found to a tolerance)."""
    out_scores, in_scores = _gaussian_worlds(3.0, 2000, 4)
    bounds = estimate_all(out_scores, in_scores, DELTA, 0.95, methods=("clopper-pearson", "clopper-pearson-split"),
                          rng=5)
    best = max(b.epsilon for b in bounds)
    for claim in np.linspace(0.1, best + 2.0, 40):
        if abs(claim - best) < 0.01 * best:
            continue
        verdict = decide(float(claim), DELTA, bounds, trials=2000)
        assert (verdict.status == VIOLATION) == (claim < best), (claim, best, verdict.reason)


def test_a_violation_names_the_test_that_rejected_not_the_largest_bound():
    """As reported for a true epsilon of 4: the weighted test rejected the claim 2.09 while the largest bound printed
    was another estimator's 1.45 (below the claim); the reason said that bound "certifies ... above the claim"."""
    weighted = EpsilonBound("one-run-weighted", 1.388, DELTA, 0.975, True, "",
                            {"claim_epsilon": 2.09, "claim_p_value": 1e-4})
    counted = EpsilonBound("one-run", 1.45, DELTA, 0.975, True, "",
                           {"canaries": 1000, "guesses": 100, "correct": 60, "corrected_for": 1})
    verdict = decide(2.09, DELTA, [counted, weighted], trials=1000)
    assert verdict.status == VIOLATION and verdict.p_value == pytest.approx(2e-4)
    assert verdict.reason.startswith("one-run-weighted rejects the claim epsilon = 2.09 at delta = 1e-05: p = 0.0001,"
                                     " 0.0002 after Bonferroni over 2 rigorous estimators")
    assert "stops below the claim" in verdict.reason and "certifies" not in verdict.reason
    assert "best rigorous bound 1.45 (one-run)" in verdict.reason


# ----- the weighted one-run bound where m delta / 2 >= 1 - confidence --------------------------------------------

M, WEIGHTED_DELTA = 1000, 1e-4  # m delta = 0.1 >= 2 (1 - 0.95): the delta term alone is alpha at eps = 0


def test_start_epsilon_is_where_the_delta_term_is_half_the_level():
    # closed form: m delta / (1 + e^eps) = alpha / 2  <=>  eps = ln(2 m delta / alpha - 1)
    assert start_epsilon(M, WEIGHTED_DELTA, 0.05) == pytest.approx(np.log(2 * 0.1 / 0.05 - 1))
    assert start_epsilon(M, 1e-6, 0.05) == 0.0  # m delta / 2 well below alpha / 2: from 0, as before


@pytest.mark.slow
def test_a_strong_signal_is_certified_where_the_bound_read_0_and_bound_and_test_agree(monkeypatch):
    rng = np.random.default_rng(5)
    included = rng.random(M) < 0.5
    scores = rng.normal(size=M) + 4.0 * included
    bound = one_run_weighted_from_scores(scores, included, WEIGHTED_DELTA, 0.95)
    assert bound.epsilon > start_epsilon(M, WEIGHTED_DELTA, 0.05)
    monkeypatch.setattr("attacks.estimators.one_run_weighted.start_epsilon", lambda *args: 0.0)
    assert one_run_weighted_from_scores(scores, included, WEIGHTED_DELTA, 0.95).epsilon == 0.0  # the old reading
    monkeypatch.undo()
    for claim in (0.5, bound.epsilon - 0.05, bound.epsilon + 0.05):
        tested = one_run_weighted_from_scores(scores, included, WEIGHTED_DELTA, 0.95, claim=claim)
        assert (tested.details["claim_p_value"] <= 0.05) == (claim < bound.epsilon), claim


@pytest.mark.slow
def test_the_weighted_bound_from_its_start_is_valid_under_an_exact_null():
    """Randomised response at epsilon 1 (exactly 1-DP towards each canary, so (1, delta)-DP) with m delta = 0.1: the
    bound may exceed 1 with probability at most 5% (its start, ln 3, is above 1: a start taken without its test would
    exceed every time). 200 seeded runs; with an exceedance probability of 5% more than 22 exceed with probability
    ``stats.binom.sf(22, 200, 0.05)`` < 0.2%, this test's false-failure probability."""
    rng = np.random.default_rng(2026)
    q = 1.0 / (1.0 + np.exp(-1.0))
    exceed = 0
    for _ in range(200):
        included = rng.random(M) < 0.5
        output = np.where(rng.random(M) < q, included, ~included).astype(float)
        exceed += one_run_weighted_from_scores(output, included, WEIGHTED_DELTA, 0.95).epsilon > 1.0
    assert stats.binom.sf(22, 200, 0.05) < 0.002
    assert exceed <= 22, exceed
