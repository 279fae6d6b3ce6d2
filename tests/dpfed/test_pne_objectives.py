"""Objectives: true maxima from closed forms, rewards in [0, 1], local versions average to the global."""

import math

import numpy as np
import pytest

from accounting.errors import ConfigurationError
from dpfed.pne.objectives import LocalObjectives, ObservationNoise, get_objective


def test_garland_true_maximum_is_the_cusp_at_pi_over_6():
    garland = get_objective("garland")
    # closed form: sin(60 pi/6) = 0, so f(pi/6) = 4 (pi/6)(1 - pi/6); not PyXAB's fmax = 1
    assert garland.f_star == pytest.approx(4 * (math.pi / 6) * (1 - math.pi / 6), abs=1e-15)
    assert garland.values(garland.x_star)[0] == pytest.approx(garland.f_star, abs=1e-7)  # sin(10 pi) ~ 1e-15
    grid = np.linspace(0, 1, 200_001)[:, None]
    values = garland.values(grid)
    assert values.max() <= garland.f_star + 1e-12
    assert values.min() >= 0.0


def test_doublesine_and_himmelblau_rewards_in_unit_interval_with_known_optima():
    ds = get_objective("doublesine")
    grid = np.linspace(0, 1, 100_001)[:, None]
    v = ds.values(grid)
    assert v.min() >= -1e-12 and v.max() <= 1.0 + 1e-12
    assert ds.values([[0.5]])[0] == 1.0 and ds.f_star == 1.0
    hb = get_objective("himmelblau")
    # Himmelblau's four minima (standard references), rescaled reward 1 - h/890
    minima = [[3.0, 2.0], [-2.805118, 3.131312], [-3.779310, -3.283186], [3.584428, -1.848126]]
    assert np.allclose(hb.values(minima), 1.0, atol=1e-9)
    assert hb.values([[5.0, 5.0]])[0] == pytest.approx(0.0, abs=1e-12)
    g = np.stack(np.meshgrid(np.linspace(-5, 5, 201), np.linspace(-5, 5, 201)), axis=-1).reshape(-1, 2)
    assert hb.values(g).min() >= -1e-12 and hb.values(g).max() <= 1.0 + 1e-12


@pytest.mark.parametrize("kind", ["bumps", "shift"])
def test_local_objectives_average_exactly_to_the_global_one(kind):
    obj = get_objective("himmelblau")
    local = LocalObjectives(obj, 7, heterogeneity=0.2, kind=kind, rng=3)
    x = np.random.default_rng(1).uniform(-5, 5, size=(300, 2))
    values = local.values(x)
    assert values.shape == (7, 300)
    assert np.allclose(values.mean(axis=0), obj.values(x), atol=1e-12)
    # really heterogeneous: at least 0.084 over 50 other seeds for either kind, so 0.01 is far from a false failure
    assert np.std(values - obj.values(x)) > 0.01


def test_bumps_move_the_local_maximisers():
    obj = get_objective("garland")
    local = LocalObjectives(obj, 10, heterogeneity=0.2, kind="bumps", rng=0)
    grid = np.linspace(0, 1, 20_001)[:, None]
    argmax = grid[np.argmax(local.values(grid), axis=1), 0]
    assert np.ptp(argmax) > 0.05  # 50 other seeds: min 0.21, mean 0.32; deterministic with this one


def test_single_client_sees_the_global_objective_and_noise_is_bounded():
    obj = get_objective("garland")
    local = LocalObjectives(obj, 1, heterogeneity=0.5, rng=0)
    x = np.linspace(0, 1, 11)[:, None]
    assert np.array_equal(local.values(x)[0], obj.values(x))
    noise = ObservationNoise("uniform", 0.2).sample(np.random.default_rng(0), 100_000)
    assert np.abs(noise).max() <= 0.1 and abs(noise.mean()) < 0.002  # std of mean 1.8e-4: 10 sigma


def test_unknown_objective_names_the_field():
    with pytest.raises(ConfigurationError, match="objective"):
        get_objective("rosenbrock")
