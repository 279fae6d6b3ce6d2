"""Canary scoring for the one-run Flower audit: the closed-form null, the all-iterates direction, the
mean-shift estimate, and null audits of the one-run bounds on simulated null cosines (no flwr needed).

Null audit (must-show 2): 200 repetitions, k = 200 canaries never inserted: both threat models' cosines
drawn from the closed-form null, signs random, bounds from ``canary_bounds`` (what the audit reports: both
estimators, both threat models, Bonferroni over the two). A valid 95% lower bound is positive in at most 5%
of repetitions; we assert at most 19 of 200 per estimator (P[Binom(200, 0.05) >= 20] = 0.0079, the
false-failure probability per estimator). The fixed seed makes the test deterministic.
"""

import numpy as np
import pytest
from scipy import stats

from attacks.probes.flower_bounds import best_bound, canary_bounds
from attacks.probes.flower_scores import (
    all_iterates_direction,
    cosines,
    mean_shift_estimate,
    null_cosine_sf,
    null_cosines,
)
from dpfed.flower.canaries import canary_direction, canary_directions, canary_signs

DIM = 650


def test_closed_form_null_matches_random_unit_vectors():
    rng = np.random.default_rng(11)
    fixed = rng.normal(size=DIM)
    direct = cosines(canary_directions(4000, DIM, seed=3), fixed)  # random unit vectors against a fixed delta
    # KS test against the closed form; p-value below 1e-3 would fail falsely with probability 1e-3
    assert stats.kstest(direct, lambda t: 1 - null_cosine_sf(t, DIM)).pvalue > 1e-3
    assert null_cosines(20000, DIM, 5).std() == pytest.approx(1 / np.sqrt(DIM), rel=0.03)


def test_directions_are_unit_and_reproducible():
    a, b = canary_directions(5, DIM, 7), canary_directions(5, DIM, 7)
    assert np.allclose(np.linalg.norm(a, axis=1), 1) and np.array_equal(a, b)


def test_direction_rows_are_independent_of_count_and_signs_fair():
    assert np.array_equal(canary_directions(3, DIM, 7)[2], canary_direction(2, DIM, 7))
    signs = canary_signs(4000, 1)
    assert set(np.unique(signs)) == {-1.0, 1.0}
    # P[|Binom(4000, 1/2) - 2000| > 130] ~ 4e-5
    assert abs(int((signs > 0).sum()) - 2000) < 130


def test_all_iterates_score_has_the_closed_form_null():
    """cos(u, V) with V the sum of normalised round deltas: for u independent of the deltas the null is
    the Beta closed form whatever the deltas (here strongly correlated rounds)."""
    rng = np.random.default_rng(12)
    common = rng.normal(size=DIM)
    rounds = [common * 3 + rng.normal(size=DIM) for _ in range(4)]
    v = all_iterates_direction(rounds)
    assert np.allclose(v, sum(r / np.linalg.norm(r) for r in rounds))
    scores = cosines(canary_directions(4000, DIM, seed=9), v)
    # KS test at 1e-3: false failure probability 1e-3
    assert stats.kstest(scores, lambda t: 1 - null_cosine_sf(t, DIM)).pvalue > 1e-3


def test_mean_shift_estimate_recovers_mu_between_the_signs():
    """Signed canaries shifted by +-mu/2 null standard deviations: the estimate's mu is the gap mu
    (standard error 2/sqrt(k) = 0.028 here; the 0.1 tolerance is 3.5 of them, false failure ~5e-4)."""
    rng = np.random.default_rng(2)
    signs = canary_signs(5000, 4)
    shifted = null_cosines(5000, DIM, rng) + signs * 1.0 / np.sqrt(DIM)
    estimate = mean_shift_estimate(shifted, signs, DIM, 1e-5)
    assert estimate["mu"] == pytest.approx(2.0, abs=0.1)
    assert estimate["mu_stderr"] == pytest.approx(2 / np.sqrt(5000), rel=0.1)
    from accounting.exact import gaussian_epsilon

    assert estimate["epsilon"] == pytest.approx(gaussian_epsilon(estimate["mu"], 1e-5))
    null = mean_shift_estimate(null_cosines(5000, DIM, rng), signs, DIM, 1e-5)
    assert abs(null["mu"]) < 0.1


def test_null_audits_positive_at_most_nominal_rate():
    rng = np.random.default_rng(2024)
    positives = {"one-run": 0, "fdp-one-run": 0}
    for _ in range(200):
        signs = np.where(rng.random(200) < 0.5, 1, -1)
        canaries = {"signs": signs.tolist(), "final_model": {"scores": null_cosines(200, DIM, rng)},
                    "all_iterates": {"scores": null_cosines(200, DIM, rng)}}
        bounds = canary_bounds(canaries, 1e-5, 0.95)
        assert {b["confidence"] for b in bounds} == {0.975}  # Bonferroni over the two threat models
        for method in positives:
            positives[method] += best_bound([b for b in bounds if b["method"] == method])["epsilon"] > 0
    assert max(positives.values()) <= 19, positives


def _round_null_scores(rng, canaries: int, rounds: int, correlation: float) -> np.ndarray:
    """Signed null scores s_j sqrt(d) cos(u_j, D_t) of never-inserted canaries: unit variance, correlated across
    one canary's rounds (consecutive model deltas share a direction) by ``correlation``."""
    shared = rng.normal(size=(canaries, 1))
    own = rng.normal(size=(canaries, rounds))
    return np.sqrt(correlation) * shared + np.sqrt(1 - correlation) * own


def test_measured_shift_recovers_the_shift_of_the_rounds_taken_part_in():
    """Canaries shifted by a = 0.4 only in the rounds they took part in (rate 0.2): the estimate is a within
    4 standard errors (false failure < 1e-4), and the other rounds do not dilute it."""
    from attacks.probes.flower_scores import measured_shift

    rng = np.random.default_rng(5)
    took_part = rng.random((400, 20)) < 0.2
    scores = _round_null_scores(rng, 400, 20, 0.3) + 0.4 * took_part
    shift = measured_shift(scores, took_part)
    assert shift["participations"] == int(took_part.sum()) and shift["canaries"] == int(took_part.any(axis=1).sum())
    assert abs(shift["shift"] - 0.4) < 4 * shift["stderr"] and shift["stderr"] < 0.05
    assert measured_shift(scores, np.ones_like(took_part))["shift"] < 0.15  # every round: diluted to ~0.08


def test_measured_shift_bound_on_null_canaries_is_positive_at_most_at_the_nominal_rate():
    """200 null audits (k = 200 canaries, 20 rounds, rate 0.2, scores correlated 0.5 across a canary's rounds):
    the 95% measured-shift bound is positive in at most 19 (P[Binom(200, 0.05) >= 20] = 0.0079, the
    false-failure probability; this seed gives 10). A naive t-test over the canary-rounds as if independent is
    positive in 31 of the same 200: the clustering by canary is what keeps the rate."""
    from attacks.probes.flower_bounds import measured_shift_bound
    from attacks.probes.flower_scores import measured_shift

    rng = np.random.default_rng(2025)
    positives = 0
    for _ in range(200):
        took_part = rng.random((200, 20)) < 0.2
        measured = measured_shift(_round_null_scores(rng, 200, 20, 0.5), took_part) | {"rate": 0.2, "releases": 20}
        positives += measured_shift_bound(measured, 1e-5, 0.95)["epsilon"] > 0
    assert positives <= 19, positives


def test_measured_shift_bound_is_the_pair_epsilon_at_the_lower_confidence_shift():
    from accounting.replace_one_pair import worst_pair_epsilon
    from attacks.probes.flower_bounds import measured_shift_bound
    from attacks.probes.flower_scores import shift_lower_bound

    measured = {"shift": 1.0, "stderr": 0.05, "canaries": 100, "participations": 800, "rate": 0.2, "releases": 20}
    low = shift_lower_bound(measured, 0.95)
    assert low == pytest.approx(1.0 - stats.t.ppf(0.95, 99) * 0.05)
    bound = measured_shift_bound(measured, 1e-5, 0.95)
    assert not bound["rigorous"] and bound["epsilon"] == pytest.approx(worst_pair_epsilon(0.2, low, 20, 1e-5))
    assert 0 < bound["epsilon"] < worst_pair_epsilon(0.2, 1.0, 20, 1e-5)
