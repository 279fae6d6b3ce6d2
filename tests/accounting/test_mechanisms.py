"""Descriptions validate; execution samples, clips, sums and adds noise of the stated scale.

Statistical tests use fixed seeds; each states its false-failure probability for a correct
implementation (the probability that a fresh seed would fail it)."""

import numpy as np
import pytest
from scipy import stats

from accounting import (
    Composition,
    ConfigurationError,
    Gaussian,
    Laplace,
    Neighbouring,
    Sampling,
    SubsampledGaussian,
)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(rate=0.0, noise_multiplier=1.0), "rate"),
        (dict(rate=1.5, noise_multiplier=1.0), "rate"),
        (dict(rate=0.5, noise_multiplier=0.0), "noise_multiplier"),
        (dict(rate=0.5, noise_multiplier=-1.0), "noise_multiplier"),
        (dict(rate=0.5, noise_multiplier=1.0, clip=-2.0), "clip"),
        (dict(rate=0.5, noise_multiplier="abc"), "noise_multiplier"),
        (dict(rate=0.5, noise_multiplier=1.0, sampling="bernoulli"), "sampling"),
        (dict(rate=0.5, noise_multiplier=1.0, neighbouring="swap"), "neighbouring"),
        (dict(rate=0.5, noise_multiplier=1.0, sampling="fixed-size"), "population"),
    ],
)
def test_invalid_descriptions_name_the_field(kwargs, field):
    with pytest.raises(ConfigurationError) as info:
        SubsampledGaussian(**kwargs)
    assert info.value.field == field


def test_descriptions_are_frozen_and_parse_enums():
    m = SubsampledGaussian(0.3, 1.0, 2.0, sampling="fixed-size", neighbouring="replace-one", population=10)
    assert m.sampling is Sampling.FIXED_SIZE and m.neighbouring is Neighbouring.REPLACE_ONE
    assert m.batch_size == 3 and m.sensitivity == 4.0 and m.noise_std == 2.0
    with pytest.raises(AttributeError):  # dataclasses.FrozenInstanceError
        m.rate = 0.5
    with pytest.raises(ConfigurationError):
        Composition(())
    with pytest.raises(ConfigurationError):
        Composition(((Gaussian(1.0), 0),))


def test_dp_events():
    import dp_accounting

    from accounting.peers import to_dp_event

    sg = to_dp_event(SubsampledGaussian(0.1, 2.0))
    assert sg == dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(2.0))
    wor = to_dp_event(SubsampledGaussian(0.5, 1.0, sampling="fixed-size", population=10))
    assert wor == dp_accounting.SampledWithoutReplacementDpEvent(10, 5, dp_accounting.GaussianDpEvent(1.0))
    comp = to_dp_event(Composition(((Gaussian(1.0), 3), (Laplace(2.0), 1))))
    assert isinstance(comp, dp_accounting.ComposedDpEvent) and len(comp.events) == 2


def test_gaussian_noise_has_stated_std():
    # KS test at level 1e-3: false-failure probability 0.001 for a correct implementation.
    mech = Gaussian(noise_multiplier=1.5, sensitivity=2.0)
    out = mech.release(np.zeros(200_000), np.random.default_rng(1))
    assert stats.kstest(out / 3.0, "norm").pvalue > 1e-3


def test_laplace_noise_has_stated_scale():
    # KS test at level 1e-3: false-failure probability 0.001.
    out = Laplace(0.5, 2.0).release(np.zeros(200_000), np.random.default_rng(2))
    assert stats.kstest(out, "laplace", args=(0, 1.0)).pvalue > 1e-3


def test_subsampled_release_clips_samples_and_noises():
    rng = np.random.default_rng(3)
    mech = SubsampledGaussian(rate=0.3, noise_multiplier=2.0, clip=1.5)
    big = rng.normal(size=(50, 4)) * 10
    assert np.all(np.linalg.norm(mech.clip_vectors(big), axis=-1) <= 1.5 + 1e-12)
    small = np.full((1, 4), 0.1)
    np.testing.assert_array_equal(mech.clip_vectors(small), small)
    # Realised sampling rate: two-sided binomial test at 1e-3 (false-failure probability 0.001).
    mask = mech.sample(np.random.default_rng(4), 100, (2000,))
    assert stats.binomtest(int(mask.sum()), mask.size, 0.3).pvalue > 1e-3
    # Zero contributions: output is pure noise of std z * clip (KS at 1e-3, false-failure 0.001).
    out = mech.release(np.zeros((20_000, 10, 3)), np.random.default_rng(5))
    assert out.shape == (20_000, 3)
    assert stats.kstest(out.ravel() / 3.0, "norm").pvalue > 1e-3


def test_clipping_with_a_huge_bound_or_a_zero_vector_warns_of_nothing():
    # min(1, C / ||v||) by the closed form: C / ||v|| only where ||v|| > C. A clip of 1e12 over a zero vector
    # used to divide 1e12 by 1e-300 and warn of an overflow (the planted no-clip bug of test_matrix_fedzero).
    import warnings

    vectors = np.array([[0.0, 0.0], [3.0, 4.0], [3e12, 4e12]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clipped = SubsampledGaussian(rate=1.0, noise_multiplier=1.0, clip=1e12).clip_vectors(vectors)
    np.testing.assert_array_equal(clipped[:2], vectors[:2])
    np.testing.assert_allclose(clipped[2], [6e11, 8e11], rtol=1e-15)


def test_release_sums_only_sampled_clipped_vectors():
    mech = SubsampledGaussian(rate=0.5, noise_multiplier=1e-9, clip=1.0)
    x = np.tile(np.array([3.0, 4.0]), (6, 1))  # norm 5, clipped to (0.6, 0.8)
    out, mask = mech.release(x, np.random.default_rng(6), return_mask=True)
    np.testing.assert_allclose(out, mask.sum() * np.array([0.6, 0.8]), atol=1e-6)


def test_fixed_size_sampling_takes_exact_batch():
    mech = SubsampledGaussian(0.35, 1.0, sampling="fixed-size", population=29)
    mask = mech.sample(np.random.default_rng(7), 29, (500,))
    assert np.all(mask.sum(axis=-1) == 10)


def test_weighted_blocks_get_max_weight_noise():
    # Two blocks with different max weights; zero signal; KS per block at 1e-3 (false-failure ~0.002).
    mech = SubsampledGaussian(rate=1.0, noise_multiplier=1.0, clip=0.5)
    weights = np.array([[0.5, 0.1, 0.1], [0.2, 0.2, 0.2]])
    out = mech.release(np.zeros((30_000, 3, 2)), np.random.default_rng(8), weights=weights, scale=2.0)
    assert out.shape == (30_000, 2, 2)
    expected = 2.0 * 1.0 * 0.5 * np.sqrt(2) * np.array([0.5, 0.2])
    for block in range(2):
        assert stats.kstest(out[:, block].ravel() / expected[block], "norm").pvalue > 1e-3


def test_whitened_weighted_contribution_is_bounded():
    # The block-noise rule keeps any one participant's whitened shift within 1/z (the accounting premise).
    rng = np.random.default_rng(9)
    mech = SubsampledGaussian(rate=1.0, noise_multiplier=2.0, clip=1.0)
    weights = rng.random((4, 7))
    std = mech.block_noise_std(weights)
    for n in range(7):
        shift = weights[:, n] * mech.clip / std
        assert np.linalg.norm(shift) <= 1 / mech.noise_multiplier + 1e-12


def test_same_seed_same_release():
    mech = SubsampledGaussian(0.4, 1.0)
    x = np.random.default_rng(0).normal(size=(5, 8, 3))
    np.testing.assert_array_equal(mech.release(x, 42), mech.release(x, 42))
