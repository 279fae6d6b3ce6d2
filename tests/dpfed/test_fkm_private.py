"""DP-FKM (our design, notes C.5): releases counted from the transcript, clipping, noise law, accounting."""

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from accounting import Composition, account_all
from accounting.errors import ConfigurationError
from accounting.mechanisms import Gaussian, SubsampledGaussian
from dpfed.fkm import (
    FKMConfig,
    dataset_release_epsilon,
    event_mechanism,
    event_release_epsilon,
    make_losses,
    run_dp_fkm,
    run_fkm,
)
from dpfed.streams import named_generator

CONFIG = FKMConfig(dim=3, horizon=400, exploration=0.3)


def test_event_level_releases_each_loss_once_and_accounts_one_gaussian():
    run = run_dp_fkm(CONFIG, seed=1, mechanism=Gaussian(2.0, 2.0))
    releases = run.transcript.filter(name="loss")
    rounds = [m.round for m in releases]
    assert rounds == list(range(1, CONFIG.horizon + 1))  # loss t enters exactly one release (round t)
    assert all(m.sender == "environment" for m in releases)
    assert run.composition() == Composition.of(run.mechanism, max(rounds.count(r) for r in set(rounds)))
    mech, eps = event_release_epsilon(run.mechanism, 1e-5)
    exact = account_all(Composition.of(mech, 1), 1e-5, names=["exact", "pld"])
    assert eps == pytest.approx(exact[0].epsilon, rel=1e-9)
    assert exact[1].epsilon == pytest.approx(eps, rel=1e-2)


def test_event_mechanism_meets_its_target_exactly():
    mech = event_mechanism(CONFIG, epsilon=2.0, delta=1e-6)
    assert mech.sensitivity == 2.0  # replace-one sensitivity 2B of a loss clipped to [-1, 1]
    exact = account_all(Composition.of(mech, 1), 1e-6, names=["exact"])[0]
    assert exact.epsilon == pytest.approx(2.0, rel=1e-6) and exact.epsilon <= 2.0 + 1e-9


def test_event_noise_has_std_two_b_sigma():
    # KS test of the standardised noise at level 1e-3 (false-failure probability 1e-3)
    mech = Gaussian(0.7, 2.0)
    run = run_dp_fkm(FKMConfig(dim=3, horizon=3000), seed=2, mechanism=mech)
    released = np.array([p[0] for p in run.transcript.payloads("loss")])
    z = (released - run.played_losses[:, 0]) / (2.0 * 0.7)
    assert stats.kstest(z, "norm").pvalue > 1e-3


def test_a_canary_loss_is_clipped_before_the_noise():
    mech = Gaussian(1.0, 2.0)

    def transcript(value):
        return run_dp_fkm(CONFIG, seed=5, mechanism=mech, canary={10: value}).transcript.to_dict()

    bound = make_losses(CONFIG, 0).bound  # B = G R of the linear family (1 up to rounding)
    assert transcript(bound) == transcript(1e6)
    assert transcript(-bound) == transcript(-50.0)
    assert transcript(bound) != transcript(0.5)


def test_private_and_public_runs_share_losses_and_directions():
    public = run_fkm(CONFIG, seed=7)
    same_step = dataclasses.replace(CONFIG, step=public.step)
    private = run_dp_fkm(same_step, seed=7, mechanism=Gaussian(1e-9, 2.0))
    first_public = public.transcript.filter(name="play")[0].payload
    first_private = private.transcript.filter(name="play")[0].payload
    assert np.allclose(first_public, first_private)
    assert np.allclose(public.played_losses, private.played_losses, atol=1e-6)


def test_noise_aware_tuning_pays_the_factor_of_c5():
    config = FKMConfig(dim=5, horizon=3_000)
    public = run_fkm(config, seed=0, runs=1, record_transcript=False)
    sigma = 0.3
    private = run_dp_fkm(config, seed=0, mechanism=Gaussian(sigma, 2.0), record_transcript=False)
    assert private.bound / public.bound == pytest.approx((1 + 4 * sigma**2) ** 0.25, rel=1e-12)


def test_dataset_level_releases_one_subsampled_gaussian_per_round():
    config = dataclasses.replace(CONFIG, horizon=60)
    run = run_dp_fkm(config, seed=3, unit="dataset", records=20, rate=0.2, noise_multiplier=1.2)
    releases = run.transcript.filter(name="loss")
    assert [m.round for m in releases] == list(range(1, 61))
    assert run.composition() == Composition.of(run.mechanism, len(releases))
    assert run.mechanism == SubsampledGaussian(0.2, 1.2, clip=run.parameters["B"])
    composition, eps = dataset_release_epsilon(run.mechanism, config.horizon, 1e-5)
    assert composition == run.composition()
    rdp = account_all(composition, 1e-5, names=["rdp"])[0].epsilon  # a valid upper bound, >= the tight one
    assert 0.5 * rdp < eps <= rdp


def test_dataset_release_is_unbiased_for_the_mean_loss():
    # one round, 4000 runs: mean of (release - true mean loss) within 5 standard errors (p < 1e-6)
    config = FKMConfig(dim=3, horizon=1, exploration=0.3, step=0.01)
    run = run_dp_fkm(config, seed=4, unit="dataset", records=40, rate=0.3, noise_multiplier=0.5, runs=4000)
    error = run.transcript.payloads("loss")[0] - run.played_losses[0]
    assert abs(error.mean()) < 5 * error.std() / math.sqrt(error.size)
    records = make_losses(config, named_generator(np.random.SeedSequence(4), "losses"), count=40)
    assert records.count == 40


def test_unknown_unit_is_a_configuration_error():
    with pytest.raises(ConfigurationError):
        run_dp_fkm(CONFIG, seed=0, unit="user")


def test_release_for_an_audit_target_is_what_the_run_composes():
    from dpfed.fkm import dp_fkm_release

    composition, eps = dp_fkm_release(CONFIG, 1e-6, epsilon=1.5)
    run = run_dp_fkm(CONFIG, seed=0, mechanism=event_mechanism(CONFIG, 1.5, 1e-6))
    assert Composition.of(composition, 1) == run.composition() and eps == pytest.approx(1.5, rel=1e-6)
    dataset, _ = dp_fkm_release(dataclasses.replace(CONFIG, horizon=5), 1e-5, unit="dataset", rate=0.3)
    assert dataset == Composition.of(SubsampledGaussian(0.3, 1.0, clip=make_losses(CONFIG, 0).bound), 5)
