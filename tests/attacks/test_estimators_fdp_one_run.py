"""The Gaussian f-DP one-run bound (Mahloujifar et al. 2025): monotone test, validity at the true mu,
and the paper's claim that it certifies at least as much as Steinke et al.'s bound in the ideal setting."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from accounting.exact import gaussian_epsilon
from attacks.estimators import estimate_one_run, fdp_one_run_lower_bound
from attacks.estimators.fdp_one_run import fdp_mu_lower_bound, fdp_rejects, guess_outcomes

REPS = 200
# A valid level-0.05 procedure exceeds this count in 200 repetitions with probability <= 1e-3.
ALLOWED = int(stats.binom.ppf(1 - 1e-3, REPS, 0.05))


def mu_for(epsilon: float, delta: float = 1e-5) -> float:
    return optimize.brentq(lambda mu: gaussian_epsilon(mu, delta) - epsilon, 1e-3, 50.0)


@pytest.mark.parametrize("m, r, v", [(100, 40, 30), (1000, 200, 170), (1000, 1000, 600), (50, 10, 10)])
def test_rejected_mu_form_an_interval_from_zero(m, r, v):
    rejected = fdp_rejects(np.linspace(0.0, 6.0, 241), m, r, v, 0.05)
    first_kept = int(np.argmin(rejected)) if not rejected.all() else rejected.size
    assert rejected[:first_kept].all() and not rejected[first_kept:].any()


def test_no_evidence_without_correct_guesses_or_at_chance():
    assert fdp_mu_lower_bound(1000, 100, 0, 0.05) == 0.0
    assert fdp_one_run_lower_bound(1000, 100, 50, 1e-5).epsilon == 0.0   # precision 1/2


def test_more_correct_guesses_certify_more():
    values = [fdp_one_run_lower_bound(1000, 200, v, 1e-5).epsilon for v in (120, 150, 180, 200)]
    assert values == sorted(values) and values[0] < values[-1]


def test_true_mu_rejected_at_most_at_the_nominal_rate():
    # Ideal Gaussian mechanism with mu = 1: a bound above the true mu is a false rejection of the truth.
    rng = np.random.default_rng(11)
    over = 0
    for _ in range(REPS):
        included = rng.random(200) < 0.5
        m, outcomes = guess_outcomes(rng.normal(size=200) + 1.0 * included, included)
        level = 0.05 / len(outcomes)
        over += any(fdp_rejects(1.0, m, o.guesses, o.correct, level)[0] for o in outcomes)
    assert over <= ALLOWED, over


def test_at_least_steinke_in_the_ideal_gaussian_setting():
    # Mahloujifar et al.: the f-DP analysis certifies more than Steinke et al.'s on the same guesses.
    rng = np.random.default_rng(5)
    for epsilon in (2.0, 4.0, 8.0):
        included = rng.random(1000) < 0.5
        scores = rng.normal(size=1000) + mu_for(epsilon) * included
        steinke, fdp = estimate_one_run(scores, included, 1e-5)
        assert fdp.epsilon >= steinke.epsilon > 0, (epsilon, steinke.epsilon, fdp.epsilon)
        assert fdp.epsilon < epsilon  # a lower bound below the truth here (95% statement; seed fixed)
    # Deterministic with this seed. For a random seed: each of the three "below the truth" checks is the
    # bound's 95% statement, so together they fail with probability <= 3 * 0.05 = 0.15 (a union bound); the
    # ordering against Steinke et al. is the paper's claim, not a guarantee. Over 100 other seeds neither
    # check failed once (0/100: a failure rate above 3% would show with probability > 0.95).


# jax_privacy 2.0.0 (an independent implementation of the same analysis), computed once with
# ``jax_privacy.auditing._epsilon_one_run_fdp(0.0, m, r, v, 0.05, delta)``: (m, r, v, delta) -> epsilon.
JAX_PRIVACY_FDP = {
    (1000, 100, 80, 1e-5): 1.40221,
    (1000, 184, 170, 1e-5): 3.26169,
    (20000, 2000, 1900, 1e-5): 3.81211,
    (20000, 500, 490, 1e-6): 4.83909,
    (200, 50, 40, 1e-6): 1.49515,
}


@pytest.mark.parametrize("counts, expected", list(JAX_PRIVACY_FDP.items()))
def test_counts_bound_matches_jax_privacy(counts, expected):
    m, r, v, delta = counts
    ours = fdp_one_run_lower_bound(m, r, v, delta, 0.95).epsilon
    # Our mu is the largest rejected point of a refined grid, so it may sit just below the exact root.
    assert expected * (1 - 5e-4) <= ours <= expected + 1e-4, (ours, expected)
