"""DP-DUETS probes (our design, notes A.9): exact replay, Gaussian score law, leakage of plain DUETS."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from accounting.errors import ConfigurationError
from accounting.exact import gaussian_epsilon
from accounting.pld import PldAccountant
from attacks.attack import run_attack
from attacks.planner import bonferroni_ceiling
from attacks.probes import PROBES, get_probe
from attacks.probes.duets import audit_mechanism
from dpfed.duets import DuetsConfig, run_duets

SMALL = dict(agents=3, horizon=20, candidates=150)


@pytest.mark.parametrize("unit", ["agent", "reward"])
def test_probe_broadcasts_are_the_algorithms_own_batched_releases(unit):
    # The probe's v_bar are those of one run_duets call with mechanism_trials (the algorithm's own release
    # code); a batch of one equals the unbatched run with the same noise stream, and each trial of a batch
    # differs (independent noise).
    extra = {"elimination": "paper"} if unit == "reward" else {}
    probe = get_probe("dp-duets-end-to-end", unit=unit, **SMALL, **extra)
    mine = probe.broadcasts(1, 1, np.random.default_rng(42))
    override = probe._worlds[1]
    run = run_duets(probe._config, probe.replay_seed, mechanism_rng=42, reward_override=override)
    actual = run.transcript.payloads(name="v_bar")
    assert len(mine) == (3 if unit == "agent" else 1)
    for a, b in zip(mine, actual, strict=False):
        np.testing.assert_array_equal(a[0], b)
    batch = probe.broadcasts(0, 4, np.random.default_rng(1))
    assert all(v.shape[0] == 4 and not np.allclose(v[0], v[1]) for v in batch)


def test_batched_releases_refuse_a_noise_dependent_elimination():
    # z = 0.05 and no DP widening: the code's elimination bites and depends on the noise, so a batch of
    # trials cannot share one trajectory
    config = DuetsConfig(
        algorithm="dp-duets",
        objective="cosine",
        num_agents=3,
        horizon=20,
        candidates=150,
        noise_multiplier=0.05,
        reward_clip=1.0,
        elimination="code",
        noise_correction=False,
    )
    with pytest.raises(ConfigurationError, match="mechanism_trials"):
        run_duets(config, 0, mechanism_rng=0, mechanism_trials=200)


def test_end_to_end_score_is_exactly_gaussian_with_the_composed_shift():
    # The canary's statistic is clipped in every epoch (clip binds), so each of the 3 releases has
    # mu_j = 1/z and the score is N(+-mu^2/2, mu^2) with mu^2 = 3/z^2. KS tests: false failure 1e-3 each.
    z = 2.0
    probe = get_probe("dp-duets-end-to-end", **SMALL, noise_multiplier=z)
    mu = math.sqrt(3) / z
    assert probe.true_epsilon(1e-5) == pytest.approx(gaussian_epsilon(mu, 1e-5), rel=1e-6)
    rng = np.random.default_rng(7)
    for world, sign in ((0, -1), (1, 1)):
        scores = probe.scores(world, 20_000, rng)
        assert stats.kstest(scores, stats.norm(sign * mu**2 / 2, mu).cdf).pvalue > 1e-3


def test_release_probe_laws_agent_and_reward_level():
    # agent level, q = 1: LLR ~ N(+-1/(2 z^2), 1/z^2); reward level: release ~ N(+-c, (z c)^2). 1e-3 each.
    rng = np.random.default_rng(3)
    agent = get_probe("dp-duets-release", noise_multiplier=1.5, epoch_length=10)
    mu = 1 / 1.5
    assert stats.kstest(agent.scores(1, 20_000, rng), stats.norm(mu**2 / 2, mu).cdf).pvalue > 1e-3
    reward = get_probe("dp-duets-release-reward", noise_multiplier=3.0, reward_clip=0.5)
    assert stats.kstest(reward.scores(0, 20_000, rng), stats.norm(-0.5, 1.5).cdf).pvalue > 1e-3
    assert reward.true_epsilon(1e-5) == pytest.approx(gaussian_epsilon(2 / 3.0, 1e-5), rel=1e-9)
    sampled = get_probe("dp-duets-release", rate=0.5, noise_multiplier=1.0)
    assert np.all(np.isfinite(sampled.scores(1, 1000, rng)))
    assert 0 < sampled.true_epsilon(1e-5) < gaussian_epsilon(1.0, 1e-5)  # amplification by sampling


def test_non_private_duets_reaches_the_trial_ceiling():
    result = run_attack(get_probe("duets-end-to-end", **SMALL), trials=1000, seed=0, delta=1e-5, claim_epsilon=1.0)
    best = max(b.epsilon for b in result.bounds if b.method == "clopper-pearson")
    assert best == pytest.approx(bonferroni_ceiling(1000, 1e-5), rel=1e-9)
    assert result.status == "VIOLATION"


def test_audit_mechanism_matches_the_run_and_an_independent_accountant():
    config = DuetsConfig(algorithm="dp-duets", noise_multiplier=2.0, candidates=150)
    composition, epsilon = audit_mechanism(config, 1e-5)
    assert composition == run_duets(config, seed=0).composition()
    assert epsilon == pytest.approx(PldAccountant(1e-3).epsilon(composition, 1e-5), abs=0.05)


def test_agent_level_replay_refuses_a_noise_dependent_trajectory_and_registry_lists_probes():
    with pytest.raises(ConfigurationError):
        get_probe("dp-duets-end-to-end", elimination="paper")
    assert {"dp-duets-release", "dp-duets-end-to-end", "duets-end-to-end"} <= set(PROBES)
