"""The DP-FTS-DE server probe's two-participant release has the law of the all-agents release.

Two-sample Kolmogorov-Smirnov tests at level 0.001 with fixed seeds (false-failure probability at most
0.001 each); the per-round mean of the log-likelihood ratio is also checked against its closed form.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from attacks.probes import get_probe


@pytest.mark.parametrize("schedule", ["uniform", "reference"])
@pytest.mark.parametrize("world", [0, 1])
def test_two_participant_release_has_the_all_agents_law(schedule, world):
    probe = get_probe("fts-server", schedule=schedule, rounds=45)  # reference: concentrated and uniform rounds
    fast = probe.scores(world, 5000, np.random.default_rng(1))
    full = probe._scores_all_agents(world, 5000, np.random.default_rng(2))
    assert stats.ks_2samp(fast, full).pvalue > 1e-3


def test_uniform_round_mean_matches_the_closed_form():
    # uniform weights, z = 1: the whitened projection is N(b, 1) with b ~ Bernoulli(q) in world 1, so the
    # world-1 mean of log((1-q) + q exp(x - 1/2)) per round is an integral computed here by quadrature.
    q = 0.35
    x, w = np.polynomial.hermite_e.hermegauss(80)
    llr = lambda shift: np.log1p(-q + q * np.exp(x + shift - 0.5))  # noqa: E731
    expected = (q * llr(1.0) + (1 - q) * llr(0.0)) @ w / np.sqrt(2 * np.pi)
    scores = get_probe("fts-server", rounds=1).scores(1, 200_000, np.random.default_rng(3))
    # standard error of the mean is about 0.002 here; 5 standard errors
    assert scores.mean() == pytest.approx(expected, abs=5 * scores.std() / np.sqrt(scores.size))
