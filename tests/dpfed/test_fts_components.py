"""Unit tests of the FTS building blocks; reference values from closed forms and the seed's notes."""

import numpy as np
import pytest

from accounting.errors import ConfigurationError
from dpfed.fts.acquisition import LinearFunctions, PiecewiseFunction, maximise
from dpfed.fts.agents import FeaturePosteriors
from dpfed.fts.features import RandomFourierFeatures
from dpfed.fts.partition import assignment, box_partition, region_of
from dpfed.fts.schedules import mixing_probability, subregion_weights, weight_gap
from dpfed.fts.weight_space import WeightSpacePosteriors


def test_features_have_norm_sqrt_variance():
    f = RandomFourierFeatures.draw(2, 100, 0.01, rng=0, variance=2.0)
    x = np.random.default_rng(1).random((50, 2))
    assert np.allclose(np.linalg.norm(f(x), axis=1), np.sqrt(2.0))


def test_unnormalised_features_approximate_the_se_kernel():
    # Rahimi-Recht: error O(M^-1/2); with M = 20000 the max error over 30 pairs is < 0.05 except with
    # negligible probability (Hoeffding per entry: P(|err| > 0.05) <= 2 exp(-M 0.05^2 / 4) ~ 1e-5).
    f = RandomFourierFeatures.draw(3, 20000, 0.3, rng=2, normalise=False)
    x = np.random.default_rng(3).random((30, 3))
    approx = f(x) @ f(x).T
    exact = np.exp(-((x[:, None] - x[None]) ** 2).sum(-1) / (2 * 0.3**2))
    assert np.max(np.abs(approx - exact)) < 0.05


def test_landmine_partition_order_and_assignment():
    boxes = box_partition(2, 4)
    expected = [[[0, 0], [0.5, 0.5]], [[0, 0.5], [0.5, 1]], [[0.5, 0], [1, 0.5]], [[0.5, 0.5], [1, 1]]]
    assert np.allclose(boxes, expected)
    assert list(region_of(np.array([[0.1, 0.9], [0.9, 0.1], [0.5, 0.5]]), boxes)) == [1, 2, 0]
    counts = np.bincount(assignment(29, 4))
    assert list(counts) == [8, 7, 7, 7]
    assert box_partition(1, 3).shape == (3, 2, 1)
    assert box_partition(2, 9).shape == (9, 2, 2)


@pytest.mark.parametrize("dim,p", [(2, 3), (2, 8), (3, 6)])
def test_partition_rejects_uneven_splits(dim, p):
    with pytest.raises(ConfigurationError) as err:
        box_partition(dim, p)
    assert err.value.field == "subregions"


def test_mixing_schedule_reference_values():
    assert mixing_probability(1) == 0.0
    assert mixing_probability(4) == pytest.approx(0.75)
    assert mixing_probability(3, "local") == 1.0
    # expected number of broadcast-guided queries in 60 iterations: H_60 = 4.68 (notes 2.6)
    assert sum(1 - mixing_probability(j) for j in range(1, 61)) == pytest.approx(4.68, abs=0.005)


def test_weight_schedule_matches_reference_numbers():
    # notes 2.2: N = 29, P = 4: max weight 1/8 (region 0) and 1/7 while g = 15; uniform 1/29 from t = 39
    regions = assignment(29, 4)
    w = subregion_weights(regions, 4, weight_gap(0))
    assert np.allclose(w.sum(axis=1), 1)
    assert w[0].max() == pytest.approx(1 / 8, rel=1e-5) and w[1].max() == pytest.approx(1 / 7, rel=1e-5)
    assert w[0, 1] == pytest.approx(np.exp(-15) / (8 + 21 * np.exp(-15)), rel=1e-9)
    assert weight_gap(9) == 15 and weight_gap(10) == 15 and weight_gap(39) == 0 and weight_gap(38) > 0
    assert np.allclose(subregion_weights(regions, 4, weight_gap(39)), 1 / 29)


def test_posterior_sampling_is_exact_in_both_regimes():
    # The mean of many draws (Matheron's rule and the weight-space square root, n <= M and n > M) must match the
    # closed-form posterior mean; 4000 draws give a Monte-Carlo error ~ sqrt(lam/4000) per coordinate.
    rng = np.random.default_rng(5)
    feats = RandomFourierFeatures.draw(1, 8, 0.2, rng=6)
    for n_obs, cls in [
        (5, FeaturePosteriors),
        (30, FeaturePosteriors),
        (5, WeightSpacePosteriors),
        (30, WeightSpacePosteriors),
    ]:
        post = cls(1, feats, noise_var=0.01)
        x = rng.random((1, n_obs, 1))
        post.add(x, np.sin(6 * x[..., 0]))
        phi = feats(x[0])
        sigma = phi.T @ phi + 0.01 * np.eye(8)
        mean = np.linalg.solve(sigma, phi.T @ np.sin(6 * x[0, :, 0]))
        cov = 0.01 * np.linalg.inv(sigma)
        draws = np.array([post.sample(rng)[0] for _ in range(4000)])
        assert np.allclose(post.posterior_mean()[0], mean)
        se = np.sqrt(np.diag(cov) / 4000)
        assert np.all(np.abs(draws.mean(0) - mean) < 5 * se)  # 5-sigma per coordinate: ~5e-6 false-fail
        assert np.allclose(np.cov(draws.T), cov, atol=0.15 * np.max(np.diag(cov)))


def test_maximise_finds_the_maximum_of_smooth_functions():
    feats = RandomFourierFeatures.draw(1, 50, 0.2, rng=7)
    w = np.random.default_rng(8).standard_normal((3, 50))
    fn = LinearFunctions(feats, w)
    x, v = maximise(fn, 1, rng=9)
    grid = np.linspace(0, 1, 20001)[:, None]
    assert np.allclose(v, fn(grid).max(axis=1), atol=1e-4)
    blocks = np.random.default_rng(10).standard_normal((2, 50))
    pw = PiecewiseFunction(feats, blocks, box_partition(1, 2))
    xg, vg = maximise(pw, 1, rng=11)
    grid_v = np.where(grid[:, 0] <= 0.5, feats(grid) @ blocks[0], feats(grid) @ blocks[1])
    assert vg[0] == pytest.approx(grid_v.max(), abs=2e-3)  # heuristic optimiser: near-max
