"""Canary scoring for the one-run Flower audit: the closed-form null, and null audits of the one-run
bounds on simulated null cosines (no flwr needed).

Null audit: 200 repetitions, k = 200 canaries never inserted (their cosines drawn from the closed-form
null, inclusion flags random). A valid 95% lower bound is positive in at most 5% of repetitions; we
assert at most 19 of 200 (P[Binom(200, 0.05) >= 20] = 0.0079, the false-failure probability per
estimator). The fixed seed makes the test deterministic.
"""

import numpy as np
import pytest
from scipy import stats

from attacks.estimators import estimate_one_run
from dpfed.flower.canaries import canary_directions, cosines, gaussian_estimate, null_cosine_sf, null_cosines

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


def test_gaussian_estimate_recovers_mu():
    rng = np.random.default_rng(2)
    shifted = null_cosines(5000, DIM, rng) + 2.0 / np.sqrt(DIM)
    assert gaussian_estimate(shifted, DIM, 1e-5)["mu"] == pytest.approx(2.0, abs=0.1)


@pytest.mark.slow
def test_null_audits_positive_at_most_nominal_rate():
    rng = np.random.default_rng(2024)
    positives = np.zeros(2, dtype=int)
    for _ in range(200):
        scores = null_cosines(200, DIM, rng)
        included = rng.random(200) < 0.5
        bounds = estimate_one_run(scores, included, 1e-5, 0.95)
        positives += [b.epsilon > 0 for b in bounds]
    assert positives.max() <= 19, positives
