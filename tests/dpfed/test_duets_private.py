"""DP-DUETS (our design, notes A.9): release counting, noise law, clipping, public bounds, replay."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from accounting.mechanisms import Composition, Neighbouring
from dpfed.duets import DuetsConfig, epoch_mechanism, run_duets
from dpfed.duets.schedule import completed_epochs, epoch_lengths

SMALL = dict(algorithm="dp-duets", num_agents=3, horizon=20, candidates=200)


def _released_sums(run):
    """A v_bar per completed epoch: the released (noisy) sum, recovered from the broadcast."""
    out = []
    for log, v_bar in zip([e for e in run.epochs if e.completed], run.transcript.payloads(name="v_bar"), strict=True):
        chol = log.model.chol
        out.append(chol @ (chol.T @ v_bar))
    return out


def _uploaded(run, epoch):
    return np.array([m.payload for m in run.transcript.filter(name="statistic", round=epoch)])


@pytest.mark.parametrize("horizon", [20, 50])
def test_agent_level_composition_counts_exactly_the_releases_in_the_transcript(horizon):
    config = DuetsConfig(**{**SMALL, "horizon": horizon})
    run = run_duets(config, seed=1)
    releases = run.transcript.filter(name="v_bar")
    composition = run.composition()
    assert composition.total_count == len(releases) == completed_epochs(horizon, config.first_epoch)
    lengths = epoch_lengths(horizon, config.first_epoch)[: len(releases)]
    assert composition == Composition(tuple((epoch_mechanism(config, t), 1) for t in lengths))
    assert [m.round for m in releases] == list(range(1, len(releases) + 1))


def test_reward_level_is_one_release_by_parallel_composition():
    config = DuetsConfig(**SMALL, unit="reward")
    run = run_duets(config, seed=1)
    mechanism = run.composition().parts[0][0]
    assert run.composition() == Composition.of(mechanism, 1)
    assert len(run.transcript.filter(name="v_bar")) == 3  # three epochs release, on disjoint rewards
    assert mechanism.neighbouring is Neighbouring.REPLACE_ONE
    assert mechanism.sensitivity == 2 * config.reward_clip  # 2 c_y kappa, kappa = 1


def test_non_private_run_has_no_composition():
    with pytest.raises(ValueError):
        run_duets(DuetsConfig(**{**SMALL, "algorithm": "duets"}), seed=0).composition()


def test_release_noise_is_gaussian_with_the_mechanism_std():
    # KS test of (released sum - uploaded sum) / (z C_j) against N(0, 1); the public clip never binds.
    # Fixed seeds; under a correct implementation the test fails with probability 1e-3.
    config = DuetsConfig(**SMALL, noise_multiplier=0.7, elimination="off")
    samples = []
    for seed in range(20):
        run = run_duets(config, seed=seed)
        for log, released in zip([e for e in run.epochs if e.completed], _released_sums(run), strict=True):
            noise = released - _uploaded(run, log.epoch).sum(axis=0)
            samples.append(noise / log.mechanism.noise_std)
    samples = np.concatenate(samples)
    assert samples.size > 300
    assert stats.kstest(samples, "norm").pvalue > 1e-3


def test_statistics_obey_the_public_bound_and_sqrt_clip_binds():
    config = DuetsConfig(**SMALL, reward_clip=0.5)
    run = run_duets(config, seed=2)
    for log in [e for e in run.epochs if e.completed]:
        norms = np.linalg.norm(_uploaded(run, log.epoch), axis=1)
        assert np.all(norms <= 0.5 * log.length + 1e-9)  # |v_j^(n)| <= c_y kappa T_j (A.9)
    tight = DuetsConfig(**SMALL, agent_clip="sqrt", clip_scale=0.1, noise_multiplier=1e-9, elimination="off")
    run = run_duets(tight, seed=2, reward_override=None)
    for log, released in zip([e for e in run.epochs if e.completed], _released_sums(run), strict=True):
        uploads = _uploaded(run, log.epoch)
        clip = 0.1 * tight.reward_clip * np.sqrt(log.length)
        assert log.mechanism.clip == pytest.approx(clip)
        norms = np.linalg.norm(uploads, axis=1, keepdims=True)
        expected = (uploads * np.minimum(1.0, clip / norms)).sum(axis=0)
        np.testing.assert_allclose(released, expected, atol=1e-6)
        assert np.any(norms > clip)  # the clip binds here, so the check above is not vacuous


def test_replaying_everything_but_the_noise_changes_only_the_releases():
    config = DuetsConfig(**SMALL, elimination="off")
    a = run_duets(config, seed=3, mechanism_rng=10)
    b = run_duets(config, seed=3, mechanism_rng=11)
    for name in ("statistic", "inducing_set", "sigma_max"):
        for x, y in zip(a.transcript.payloads(name=name), b.transcript.payloads(name=name), strict=True):
            np.testing.assert_array_equal(x, y)
    assert not np.allclose(a.transcript.payloads(name="v_bar")[0], b.transcript.payloads(name="v_bar")[0])


def test_noise_correction_widens_the_threshold_only_when_asked():
    on = run_duets(DuetsConfig(**SMALL), seed=4)
    off = run_duets(DuetsConfig(**SMALL, noise_correction=False), seed=4)
    assert all(e.widening > 0 for e in on.epochs if e.completed)
    assert all(e.widening == 0 for e in off.epochs if e.completed)
