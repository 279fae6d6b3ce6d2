"""DP-Fed-PNE: mechanism and calibration, clipping, per-reward noise, event-level composition."""

import math

import numpy as np
import pytest

from accounting import Composition, account_all
from accounting.errors import ConfigurationError
from dpfed.pne import ObservationNoise, Partition, RewardOverride, get_objective, run_dp_fed_pne, run_fed_pne

NOISE_FREE = ObservationNoise("none")


def test_composition_is_one_gaussian_release_and_meets_the_target():
    run = run_dp_fed_pne("garland", 4, 1_000, epsilon=2.0, dp_delta=1e-6, seed=0)
    assert run.composition() == Composition.of(run.mechanism, 1)
    exact = account_all(run.composition(), 1e-6, names=["exact"])[0]
    assert exact.ok and exact.epsilon <= 2.0 + 1e-9 and exact.epsilon == pytest.approx(2.0, rel=1e-6)
    with pytest.raises(ValueError):
        run_fed_pne("garland", 4, 1_000, seed=0).composition()


def test_classic_calibration_uses_the_papers_formula():
    run = run_dp_fed_pne("garland", 2, 200, epsilon=0.5, dp_delta=1e-5, calibration="classic", seed=0)
    assert run.mechanism.noise_std == pytest.approx(math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5, rel=1e-12)
    assert run.mechanism.sensitivity == 1.0


@pytest.mark.parametrize("inside, outside", [(1.0, 1000.0), (0.0, -7.5)])
def test_rewards_are_clipped_before_the_noise(inside, outside):
    # same seed => same privacy noise; a reward outside [0, 1] must release exactly what its clipped
    # value does
    node_run = run_fed_pne("garland", 3, 2_000, seed=9)
    depth, index = node_run.phases[0].nodes[1]

    def transcript(value):
        override = RewardOverride(client=1, depth=depth, index=index, value=value)
        return run_dp_fed_pne("garland", 3, 2_000, epsilon=1.0, seed=9, reward_override=override).transcript

    assert transcript(inside).to_dict() == transcript(outside).to_dict()
    assert transcript(inside).to_dict() != transcript(0.5).to_dict()


def test_each_upload_carries_fresh_noise_of_std_sigma_over_sqrt_t():
    obj = get_objective("garland")
    run = run_dp_fed_pne("garland", 50, 3_000, epsilon=1.0, seed=4, noise=NOISE_FREE, heterogeneity=0.0)
    sigma = run.mechanism.noise_std
    z = []
    for phase in run.phases:
        if not phase.completed:
            continue
        part = Partition(obj.domain, seed=int(run.parameters["partition"]["seed"]))
        truth = {key: obj.values(part.node(*key).centre)[0] for key in phase.nodes}
        for msg in run.transcript.filter(name="local_means", round=phase.phase):
            means = np.asarray(msg.payload["means"])
            exact = np.array([truth[tuple(key)] for key in msg.payload["nodes"]])
            z.extend((means - exact) * math.sqrt(phase.pulls) / sigma)
    z = np.asarray(z)
    assert z.size >= 1500
    # standard normal: mean std 1/sqrt(n), variance std sqrt(2/n); 6-sigma bands (false failure < 1e-8)
    assert abs(z.mean()) < 6 / math.sqrt(z.size)
    assert abs(z.var() - 1.0) < 6 * math.sqrt(2 / z.size)


def test_regret_rises_as_epsilon_falls():
    regret = {
        eps: np.mean([run_dp_fed_pne("garland", 10, 5_000, epsilon=eps, seed=s).final_regret for s in range(6)])
        for eps in (1.0, 8.0)
    }
    plain = np.mean([run_fed_pne("garland", 10, 5_000, seed=s).final_regret for s in range(6)])
    assert regret[1.0] > regret[8.0] > 0.8 * plain


def test_privacy_and_confidence_deltas_are_separate_parameters():
    run = run_dp_fed_pne("garland", 4, 500, epsilon=1.0, dp_delta=1e-7, conf_delta=0.5, seed=0)
    assert run.parameters["dp_delta"] == 1e-7 and run.parameters["conf_delta"] == 0.5
    noisy_c = run.parameters["c"]
    assert noisy_c == pytest.approx(0.1 * math.sqrt(1 + 4 * run.mechanism.noise_std**2))
    plain_c = run_dp_fed_pne("garland", 4, 500, epsilon=1.0, seed=0, scale_c_for_noise=False).parameters["c"]
    assert plain_c == 0.1


@pytest.mark.parametrize(
    "kwargs, field",
    [({"epsilon": 0.0}, "epsilon"), ({"dp_delta": 1.0}, "delta"), ({"calibration": "rdp"}, "calibration")],
)
def test_bad_privacy_parameters_name_the_field(kwargs, field):
    with pytest.raises(ConfigurationError, match=field):
        run_dp_fed_pne("garland", 2, 100, seed=0, **kwargs)


def test_canary_hook_moves_exactly_one_upload_by_one_over_t():
    plain = run_dp_fed_pne("garland", 5, 2_000, epsilon=1.0, seed=21, noise=NOISE_FREE)
    assert not plain.canary_slots(max_pulls=1)  # c inflated for the noise: tau_0 > M, so t >= 2 here
    phase, depth, index, pulls = plain.canary_slots(max_pulls=10)[0]
    assert pulls >= 2 and phase == 1
    worlds = {
        v: run_dp_fed_pne(
            "garland",
            5,
            2_000,
            epsilon=1.0,
            seed=21,
            noise=NOISE_FREE,
            reward_override=RewardOverride(client=2, depth=depth, index=index, value=v),
        )
        for v in (0.0, 1.0)
    }
    # same seed: identical privacy noise, so the two worlds' uploads differ by exactly (1 - 0) / t
    diff = worlds[1.0].upload(2, depth, index) - worlds[0.0].upload(2, depth, index)
    assert diff == pytest.approx(1.0 / pulls, abs=1e-12)
    assert worlds[1.0].upload(1, depth, index) == worlds[0.0].upload(1, depth, index)
    assert plain.upload(2, 60, 1) is None
