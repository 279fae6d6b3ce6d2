"""Algorithm probes (DP-FTS-DE, DP-Fed-PNE, end to end) and the user-mechanism probe."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, stats

from attacks.attack import run_attack
from attacks.probes import get_probe

CONFIGS = str(Path(__file__).resolve().parents[2] / "configs" / "attack_user_example_datasets.toml")


def test_pne_reward_upload_is_the_noisy_clipped_mean():
    # seed_fedpne.md 3.4: classic sigma for (eps = 1, delta = 1e-5) is 4.845; the upload of a node pulled
    # t times is (canary + known others) / t + N(0, sigma^2 / t). KS tests: false failure 1e-3 each.
    sigma = math.sqrt(2 * math.log(1.25 / 1e-5))
    assert sigma == pytest.approx(4.845, abs=1e-3)
    rng = np.random.default_rng(0)
    for pulls in (1, 4):
        probe = get_probe("pne-reward", pulls=pulls)
        for world in (0, 1):
            mean = (world + 0.5 * (pulls - 1)) / pulls
            scores = probe.scores(world, 20_000, rng)
            law = stats.norm(mean, sigma / math.sqrt(pulls))
            assert stats.kstest(scores, law.cdf).pvalue > 1e-3
    # the true epsilon at t = 1 is 0.75 (notes); at t = 4 the shift is 1/4 and the std sigma/2, i.e. mu = 1/(2 sigma).
    # Both from Balle & Wang's exact Gaussian privacy profile, solved here with scipy (was a pasted 0.35).
    assert get_probe("pne-reward").true_epsilon(1e-5) == pytest.approx(0.75, abs=0.01)
    for pulls in (1, 4):
        mu = 1 / (sigma * math.sqrt(pulls))  # shift 1/t over std sigma/sqrt(t)
        exact = optimize.brentq(lambda e, mu=mu: balle_wang_delta(e, mu) - 1e-5, 0.0, 20.0)
        assert get_probe("pne-reward", pulls=pulls).true_epsilon(1e-5) == pytest.approx(exact, rel=1e-4)


def balle_wang_delta(epsilon, mu):
    """delta(epsilon) of a Gaussian mechanism with shift/std mu (Balle & Wang 2018, Theorem 8)."""
    return stats.norm.cdf(mu / 2 - epsilon / mu) - math.exp(epsilon) * stats.norm.cdf(-mu / 2 - epsilon / mu)


def test_pne_clipping_neutralises_an_out_of_range_canary():
    a = get_probe("pne-reward").scores(1, 1000, np.random.default_rng(1))
    b = get_probe("pne-unclipped-canary").scores(1, 1000, np.random.default_rng(1))
    assert np.array_equal(a, b)


def test_pne_end_to_end_upload_moves_by_exactly_the_canary():
    # Same seed in both worlds: only the canary reward differs, the privacy noise is identical, and the
    # node is pulled once, so the uploaded mean moves by exactly 1.
    probe = get_probe("pne-end-to-end", score="upload")
    s0 = probe.scores(0, 5, np.random.default_rng(3))
    s1 = probe.scores(1, 5, np.random.default_rng(3))
    assert s1 - s0 == pytest.approx(np.ones(5), abs=1e-9)
    assert probe.metadata(1e-5)["threat_model"] == "server view"
    # The default replay score is the Gaussian log-likelihood ratio x / sigma^2 - 1 / (2 sigma^2) of the
    # residual x, which moves by exactly 1 as well.
    replay = get_probe("pne-end-to-end")
    variance = replay.mechanism().noise_std ** 2
    r0, r1 = (replay.scores(w, 5, np.random.default_rng(3)) for w in (0, 1))
    assert (r1 - r0) * variance == pytest.approx(np.ones(5), abs=1e-9)
    assert "replay" in replay.metadata(1e-5)["threat_model"]


def test_fts_end_to_end_runs_the_real_algorithm():
    probe = get_probe("fts-end-to-end", rounds=3)
    rng = np.random.default_rng(4)
    scores = np.concatenate([probe.scores(w, 2, rng) for w in (0, 1)])
    assert scores.shape == (4,) and np.all(np.isfinite(scores))
    assert 0 < probe.true_epsilon(probe.default_delta) < 5


@pytest.mark.parametrize("name, low, tight", [("fts-server", 5.5, 10.38), ("fts-server-reference", 4.2, 6.20)])
def test_fts_server_bounds_approach_but_stay_below_the_tight_epsilon(name, low, tight):
    # seed_dpftsde.md 4.5/4.8: tight PLD epsilon 10.38 (uniform weights) and 6.20 (reference schedule).
    # Upper side: a correct mechanism exceeds it with probability <= 5% (validity of the bound).
    # Lower side (power, 2x10^4 trials/world; 10^5 reach 7.6 and 5.4 in benchmarks/attack_speed.py):
    # observed 6.1 and 4.7 for this seed, thresholds are well below.
    result = run_attack(name, 20_000, seed=5)
    cp = next(b for b in result.bounds if b.method == "clopper-pearson")
    assert result.true_epsilon == pytest.approx(tight, abs=0.02)
    assert low <= cp.epsilon < tight


def test_user_probe_passes_a_correct_mechanism_and_supports_batched_callables():
    # Deterministic with these seeds. For random seeds: each PASS check fails with probability <= 0.05
    # (the rigorous bound's confidence; <= 0.1 for both; 15 of 15 other seeds passed both); the AUC was
    # 0.748 +- 0.008 over those seeds, so "> 0.6" is 19 sd away (negligible).
    probe = get_probe("user", function="attacks.probes.examples:laplace_count", datasets=CONFIGS)
    result = run_attack(probe, 4000, seed=6, claim_epsilon=1.0)
    assert result.status == "PASS" and result.training_trials == 2000
    batched = get_probe(
        "user", function="attacks.probes.examples:gaussian_sum", datasets=CONFIGS, classifier="boosting"
    )
    result = run_attack(batched, 4000, seed=7, claim_epsilon=5.0)  # true epsilon about 4.4 (mu = 1)
    assert result.status == "PASS" and result.roc["auc"] > 0.6
