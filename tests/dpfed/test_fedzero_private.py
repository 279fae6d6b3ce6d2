"""DP-FedZero (our design, notes B.5): releases counted from the transcript, clipping, noise, accounting."""

import math

import numpy as np
import pytest
from scipy import stats

from accounting import Composition, account_all
from accounting.errors import ConfigurationError
from accounting.mechanisms import SubsampledGaussian
from dpfed.fedzero import FedZeroConfig, ScalarCanary, release_epsilon, run_dp_fedzero

CONFIG = FedZeroConfig(dim=5, workers=3, rounds=40, records=6)


@pytest.mark.parametrize(
    "unit, noise, name, per_round",
    [("worker", "scalar", "scalar", 3), ("worker", "vector", "noisy_sum", 1), ("record", "scalar", "scalar", 3)],
)
def test_composition_counts_the_releases_of_one_unit(unit, noise, name, per_round):
    run = run_dp_fedzero(CONFIG, seed=1, unit=unit, noise=noise, rate=0.5, noise_multiplier=1.3)
    releases = run.transcript.filter(name=name)
    assert len(releases) == CONFIG.rounds * per_round
    assert {m.name for m in run.transcript} == {"iterate", name}  # nothing else crosses the network
    # every unit (a worker, or a record of one worker) is in exactly one release per round
    sender = releases[0].sender
    rounds_of_unit = [m.round for m in releases if m.sender == sender]
    assert rounds_of_unit == list(range(1, CONFIG.rounds + 1))
    assert run.composition() == Composition.of(run.mechanism, len(rounds_of_unit))
    assert run.mechanism.rate == 0.5 and run.mechanism.noise_multiplier == 1.3


def test_vector_noise_mechanism_has_the_sign_vector_sensitivity():
    run = run_dp_fedzero(CONFIG, seed=1, noise="vector", clip=0.7)
    assert run.mechanism.clip == pytest.approx(5 * 0.7 * math.sqrt(5))  # d C ||sign(zeta)||_2 = d^(3/2) C


def test_worker_scalars_are_clipped_before_the_noise():
    def transcript(value):
        canary = ScalarCanary(worker=1, value=value)
        return run_dp_fedzero(CONFIG, seed=4, clip=0.5, canary=canary).transcript.to_dict()

    assert transcript(0.5) == transcript(1e6)
    assert transcript(-0.5) == transcript(-30.0)
    assert transcript(0.5) != transcript(0.25)


def test_worker_scalar_noise_is_gaussian_with_std_sigma_c():
    # rate 1: every release is clip(s) + N(0, (sigma C)^2); KS at level 1e-3 (false-failure prob. 1e-3)
    config = FedZeroConfig(dim=5, workers=2, rounds=1500)
    canary = ScalarCanary(worker=0, value=0.3)
    run = run_dp_fedzero(config, seed=2, noise_multiplier=0.8, clip=0.5, canary=canary, track_regret=False)
    noise = np.array([m.payload[0] for m in run.transcript.filter(name="scalar", sender="agent0")]) - 0.3
    assert stats.kstest(noise / (0.8 * 0.5), "norm").pvalue > 1e-3


def test_record_level_canary_is_sampled_at_rate_q():
    # huge clip-relative shift: the canary's releases are bimodal; the fraction near the shift is q.
    # 1000 rounds, q = 0.3: 6 binomial standard errors, false-failure probability < 1e-8
    config = FedZeroConfig(dim=5, workers=2, rounds=1000, records=4)
    canary = ScalarCanary(worker=1, value=1.0, record=2)
    run = run_dp_fedzero(
        config, seed=5, unit="record", rate=0.3, noise_multiplier=0.05, canary=canary, track_regret=False
    )
    released = np.array([m.payload[0] for m in run.transcript.filter(name="scalar", sender="agent1")])
    present = np.mean(released > 0.5)
    assert abs(present - 0.3) < 6 * math.sqrt(0.3 * 0.7 / 1000)


def test_release_epsilon_is_the_tight_epsilon_of_n_rounds():
    mech = SubsampledGaussian(1.0, 2.0, clip=1.0)
    composition, eps = release_epsilon(mech, 25, 1e-5)
    assert composition == Composition.of(mech, 25)
    exact = account_all(Composition.of(mech, 25), 1e-5, names=["exact"])[0]
    assert eps == pytest.approx(exact.epsilon, rel=1e-9)  # rate 1: one Gaussian with mu = 5/2
    _, eps_sub = release_epsilon(SubsampledGaussian(0.2, 2.0), 5, 1e-5)
    assert 0 < eps_sub < eps


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"unit": "team"}, "unit"),
        ({"noise": "matrix"}, "noise"),
        ({"unit": "record", "noise": "vector"}, "noise"),
        ({"rate": 0}, "rate"),
        ({"noise_multiplier": -1}, "noise_multiplier"),
    ],
)
def test_bad_private_options_name_the_field(kwargs, field):
    with pytest.raises(ConfigurationError) as info:
        run_dp_fedzero(CONFIG, seed=0, **kwargs)
    assert info.value.field == field


@pytest.mark.parametrize(
    "noise, energy", [("scalar", lambda d, m, q: d**3 / (q**2 * m)), ("vector", lambda d, m, q: d**4 / (q**2 * m**2))]
)
def test_noise_energy_in_the_gradient_matches_notes_b5(noise, energy):
    # E||g_noise||^2 = d^3 sigma^2 C^2 / (q^2 m) (scalar) or d^4 sigma^2 C^2 / (q^2 m^2) (vector), sigma = C = 1
    # plus, under Poisson sampling, nothing else when all scalars are 0. 20000 draws: the mean of a
    # (scaled) chi-square within 5% (about 7 standard errors for the scalar case; false failure < 1e-9)
    from dpfed.fedzero import dp_uplink
    from dpfed.fedzero.geometry import sample_directions

    d, m, q, draws = 6, 3, 0.5, 20_000
    config = FedZeroConfig(dim=d, workers=m)
    uplink = dp_uplink(config, "worker", noise, q, 1.0, 1.0)
    rng = np.random.default_rng(0)
    _, weights = sample_directions(rng, (draws, m), d, "l1")
    zeros = np.zeros((draws, m, 1))
    g = uplink.aggregate(1, zeros, zeros, weights, rng, None, "scalar")
    assert np.mean(np.sum(g**2, axis=1)) == pytest.approx(energy(d, m, q), rel=0.05)


def test_release_for_an_audit_target_is_what_the_run_composes():
    from dpfed.fedzero import dp_fedzero_release

    config = FedZeroConfig(dim=5, workers=3, rounds=30)
    composition, eps = dp_fedzero_release(config, 1e-5, rate=1.0, noise_multiplier=3.0)
    run = run_dp_fedzero(config, seed=0, rate=1.0, noise_multiplier=3.0, track_regret=False)
    assert composition == run.composition()
    exact = account_all(composition, 1e-5, names=["exact"])[0].epsilon  # mu = sqrt(30) / 3
    assert eps == pytest.approx(exact, rel=1e-9)
