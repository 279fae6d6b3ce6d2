"""FedZero (notes B.1-B.3): directions, estimator, FTRL replayed from the transcript, constants, regret."""

import math

import numpy as np
import pytest
from scipy import optimize, stats

from accounting.errors import ConfigurationError
from dpfed.fedzero import ContextLosses, FedZeroConfig, explicit_bound, run_fedzero, theorem_bound
from dpfed.fedzero.geometry import sample_directions
from dpfed.streams import named_generator


def test_l1_directions_are_uniform_on_the_l1_sphere():
    zeta, w = sample_directions(np.random.default_rng(0), (20_000,), 5, "l1")
    assert np.allclose(np.abs(zeta).sum(axis=1), 1.0)
    assert np.array_equal(w, np.where(zeta >= 0, 1.0, -1.0))
    # uniform on the l1 sphere: |zeta_1| ~ Beta(1, d - 1) (a Dirichlet marginal); KS at level 1e-4
    assert stats.kstest(np.abs(zeta[:, 0]), stats.beta(1, 4).cdf).pvalue > 1e-4
    zeta2, w2 = sample_directions(np.random.default_rng(0), (10,), 5, "l2")
    assert np.allclose(np.linalg.norm(zeta2, axis=1), 1.0) and np.array_equal(zeta2, w2)


@pytest.mark.parametrize("randomisation", ["l1", "l2"])
@pytest.mark.parametrize("one_point", [False, True])
def test_estimator_is_unbiased_for_a_linear_loss(randomisation, one_point):
    # f(x) = <a, x> + 0.3: the smoothed gradient is a. 4e5 draws, 5 standard errors per coordinate
    # (false-failure probability < 1e-5)
    d, h, a, x = 4, 0.05, np.array([0.5, -1.0, 0.25, 0.0]), np.array([0.1, 0.2, 0.3, 0.4])
    zeta, w = sample_directions(np.random.default_rng(1), (400_000,), d, randomisation)
    f = (x + h * zeta) @ a + 0.3
    s = f / h if one_point else (f - ((x - h * zeta) @ a + 0.3)) / (2 * h)
    g = d * s[:, None] * w
    se = g.std(axis=0) / math.sqrt(len(g))
    assert np.all(np.abs(g.mean(axis=0) - a) < 5 * se + 1e-12)


@pytest.mark.parametrize("geometry", ["l2", "l1"])
def test_transcript_replays_dual_averaging(geometry):
    config = FedZeroConfig(dim=5, workers=3, rounds=120, geometry=geometry)
    run = run_fedzero(config, seed=3)
    iterates = np.array([p[0] for p in run.transcript.payloads("iterate")])
    diffs = np.array([[m.payload[0] for m in run.transcript.filter(name="difference", round=t)] for t in range(1, 121)])
    assert iterates.shape == (120, 5) and diffs.shape == (120, 3)
    assert len(run.transcript) == 120 * 4
    _, w = sample_directions(named_generator(3, "directions"), (120, 1, 3), 5, "l1")
    eta, h = run.step, run.perturbation
    z = np.zeros(5)
    for t in range(120):
        if geometry == "l2":
            expected = eta * z / max(1.0, np.linalg.norm(eta * z))
        else:
            expected = np.exp(eta * z - np.max(eta * z))
            expected /= expected.sum()
        assert np.allclose(iterates[t], expected)
        z -= 5 / (2 * h) * (diffs[t][:, None] * w[t, 0]).mean(axis=0)


def test_step_sizes_follow_corollary_4_2():
    # l2: R = 1/sqrt(2), q = p = 2, d_1 = d, b_2(d) = 2 sqrt(d)/(d+1); l1: R = sqrt(log d), q = p = 1,
    # d_1 = d, b_1(d) = d/(d+1)
    d, n = 10, 4000
    eta, h = FedZeroConfig(dim=d, rounds=n, geometry="l2").parameters()
    assert eta == pytest.approx(1 / math.sqrt(2) / math.sqrt(n * d))
    assert h == pytest.approx(1 / math.sqrt(2) / (2 * math.sqrt(d) / (d + 1)) / math.sqrt(n))
    eta, h = FedZeroConfig(dim=d, rounds=n, geometry="l1").parameters()
    assert eta == pytest.approx(math.sqrt(math.log(d)) / math.sqrt(n * d))
    assert h == pytest.approx(math.sqrt(math.log(d)) / (d / (d + 1)) / math.sqrt(n))


@pytest.mark.parametrize("kind", ["l1", "l2"])
def test_global_minimiser_is_optimal(kind):
    losses = ContextLosses.generate(kind, 3, 8, 4, 2)
    best = losses.minimiser
    rng = np.random.default_rng(0)
    if kind == "l1":
        assert best.min() >= -1e-9 and best.sum() == pytest.approx(1.0)
        others = rng.dirichlet(np.ones(4), size=2000)
        simplex = {"type": "eq", "fun": lambda x: x.sum() - 1}
        numeric = optimize.minimize(
            losses.global_loss, np.full(4, 0.25), method="SLSQP", bounds=[(0, 1)] * 4, constraints=[simplex]
        )
        assert losses.minimum <= numeric.fun + 1e-9
    else:
        others = best + 0.05 * rng.normal(size=(2000, 4))
        assert np.linalg.norm(best) < 0.5
    assert np.all(losses.global_loss(others) >= losses.minimum - 1e-12)


@pytest.mark.parametrize("geometry", ["l2", "l1"])
def test_regret_is_sublinear_and_below_the_bounds(geometry):
    config = FedZeroConfig(dim=6, workers=4, rounds=3000, geometry=geometry)
    run = run_fedzero(config, seed=1, runs=4, record_transcript=False)
    bracket = theorem_bound(config)
    assert np.all(run.final_regret < bracket)  # empirical C < 1 (measured ~0.03, BENCHMARKS.md)
    assert theorem_bound(config) < explicit_bound(config)
    assert np.all(run.instant_regret >= -1e-12)  # the minimum is the minimum
    assert run.uplink_reals == 3000 * 4 and run.downlink_reals == 3000 * 6
    with pytest.raises(ValueError):
        run.composition()


def test_one_point_estimator_sends_values():
    run = run_fedzero(FedZeroConfig(dim=4, workers=2, rounds=50, estimator="one-point"), seed=0)
    assert len(run.transcript.filter(name="value")) == 100 and not run.transcript.filter(name="difference")


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"dim": 2}, "dim"),
        ({"workers": 0}, "workers"),
        ({"geometry": "l3"}, "geometry"),
        ({"estimator": "x"}, "estimator"),
        ({"randomisation": "linf"}, "randomisation"),
        ({"step": 0}, "step"),
        ({"conf_delta": 1}, "conf_delta"),
    ],
)
def test_bad_configuration_names_the_field(kwargs, field):
    with pytest.raises(ConfigurationError) as info:
        FedZeroConfig(**kwargs)
    assert info.value.field == field
