"""DUETS invariants: epoch schedule, surrogate identities, elimination, determinism, communication."""

from __future__ import annotations

import numpy as np
import pytest

from accounting.errors import ConfigurationError
from dpfed.duets import DuetsConfig, make_objective, objective_of, run_duets
from dpfed.duets.objectives import branin, hartmann4
from dpfed.duets.schedule import completed_epochs, epoch_lengths
from dpfed.duets.surrogate import NystromFeatures, SparseModel, exact_posterior_variance

SMALL = dict(num_agents=3, horizon=20, candidates=300)


def test_epoch_schedule_matches_the_worked_example_of_the_notes():
    # notes A.4: T = 50, T_1 = 2 gives T_j = 2, 10, 22, 33 and 3 communication rounds
    assert epoch_lengths(50, 2) == [2, 10, 22, 33]
    assert completed_epochs(50, 2) == 3
    run = run_duets(DuetsConfig(candidates=300), seed=0)
    assert [e.length for e in run.epochs] == [2, 10, 22, 33]
    assert [e.completed for e in run.epochs] == [True, True, True, False]
    assert sorted({m.round for m in run.transcript}) == [1, 2, 3]


def test_epoch_that_ends_exactly_at_the_horizon_does_not_communicate():
    # T = 12, T_1 = 2: T_j = 2, 4 (floor sqrt 24), 6 (floor sqrt 48): cumulative 2, 6, 12 -> 2 rounds
    assert epoch_lengths(12, 2) == [2, 4, 6]
    assert completed_epochs(12, 2) == 2


def test_optima_of_branin_and_hartmann_match_the_notes():
    assert branin(np.array([0.5428, 0.1517])) == pytest.approx(1.047394, abs=2e-4)
    assert hartmann4(np.array([0.1874, 0.1942, 0.5579, 0.2648])) == pytest.approx(3.72984, abs=2e-4)


def _closed_forms(kernel, inducing, data, y, lam):
    k_ss, k_sx = kernel[np.ix_(inducing, inducing)], kernel[np.ix_(inducing, data)]
    middle = lam * k_ss + k_sx @ k_sx.T
    mean = kernel[inducing].T @ np.linalg.solve(middle, k_sx @ y)
    ks = kernel[inducing]
    variance = (1.0 - np.einsum("sm,sm->m", ks, np.linalg.solve(k_ss, ks))) / lam + np.einsum(
        "sm,sm->m", ks, np.linalg.solve(middle, ks)
    )
    return mean, variance


def test_sparse_model_equals_the_equivalent_forms_without_the_inverse_square_root():
    objective = make_objective("hartmann4", 120, seed=1)
    rng = np.random.default_rng(0)
    data = rng.choice(120, 40, replace=False)
    inducing = data[:15]
    y = objective.values[data] + 0.1 * rng.standard_normal(40)
    features = NystromFeatures.build(objective.kernel, inducing, jitter=0.0)
    z = features(objective.kernel, data)
    model = SparseModel.build(z, lam=0.2)
    z_all = features(objective.kernel, np.arange(120))
    mean, variance = _closed_forms(objective.kernel, inducing, data, y, 0.2)
    np.testing.assert_allclose(model.mean(z_all, model.solve(z.T @ y)), mean, atol=1e-8)
    np.testing.assert_allclose(model.scaled_variance(z_all), 0.2 * variance, atol=1e-8)
    assert np.all(np.linalg.norm(z_all, axis=1) <= 1.0 + 1e-12)  # |z_S(x)| <= kappa (A.2)


def test_scaled_variance_is_the_exact_posterior_variance_when_inducing_set_is_all_data():
    objective = make_objective("branin", 100, seed=2)
    data = np.arange(0, 100, 4)
    features = NystromFeatures.build(objective.kernel, data, jitter=0.0)
    model = SparseModel.build(features(objective.kernel, data), lam=0.2)
    exact = exact_posterior_variance(objective.kernel, data, np.arange(100), 0.2)
    np.testing.assert_allclose(model.scaled_variance(features(objective.kernel, np.arange(100))), exact, atol=1e-7)


def test_same_seed_same_transcript_and_different_seed_differs():
    config = DuetsConfig(objective="cosine", **SMALL)
    a, b, c = (run_duets(config, seed=s).transcript.to_dict() for s in (5, 5, 6))
    assert a == b
    assert a != c


def test_active_set_shrinks_and_inducing_points_come_from_the_epoch_queries():
    run = run_duets(DuetsConfig(objective="hartmann4", candidates=500), seed=3)
    completed = [e for e in run.epochs if e.completed]
    sizes = [completed[0].active_before] + [e.active_after for e in completed]
    assert all(b <= a for a, b in zip(sizes, sizes[1:], strict=False))
    assert sizes[-1] < sizes[0]
    for e in completed:
        queried = set(run.points[:, e.start : e.start + e.length].reshape(-1).tolist())
        assert set(e.inducing.tolist()) <= queried


@pytest.mark.parametrize("name", ["branin", "hartmann4"])
def test_noise_free_easy_instance_never_eliminates_the_optimum(name):
    config = DuetsConfig(objective=name, candidates=400, noise_std=0.0, beta=2.0, horizon=200)
    objective = objective_of(config)
    best = int(np.argmax(objective.values))
    run = run_duets(config, seed=4)
    completed = [e for e in run.epochs if e.completed]
    assert completed[-1].active_after < objective.size  # elimination happened
    assert all(best in e.active_set for e in completed)


def test_communication_counted_from_the_transcript_matches_the_formula():
    config = DuetsConfig(objective="hartmann4", candidates=400)
    run = run_duets(config, seed=1)
    d, n = 4, config.num_agents
    sizes = [e.inducing.size for e in run.epochs if e.completed]
    formula = sum((d + 1) * s + 1 + s for s in sizes)  # downlink d|S| + |S| + 1, uplink |S| per agent
    t = run.transcript
    down = sum(np.size(m.payload) for m in t.filter(receiver="*"))
    up = sum(np.size(m.payload) for m in t.filter(name="statistic")) / n
    assert run.communication[-1] == formula == down + up


def test_regret_is_nonnegative_and_sums_over_agents():
    run = run_duets(DuetsConfig(objective="polynomial", **SMALL), seed=0)
    assert np.all(run.instant_regret >= 0)
    assert run.regret[-1] == pytest.approx(run.instant_regret.sum())


@pytest.mark.parametrize(
    "changes",
    [
        {"objective": "nope"},
        {"horizon": 0},
        {"beta": "loose"},
        {"p0": "sec3"},
        {"unit": "reward", "rate": 0.5},
        {"elimination": "x"},
        {"noise_correction": 1},
        {"typo_key": 1},
    ],
)
def test_bad_configuration_names_the_field(changes):
    with pytest.raises(ConfigurationError):
        DuetsConfig.from_dict(changes)


def test_empty_inducing_set_sends_nothing_and_eliminates_nothing():
    run = run_duets(DuetsConfig(objective="hartmann4", candidates=200, p0=1e-9), seed=0)
    completed = [e for e in run.epochs if e.completed]
    assert all(e.inducing.size == 0 and e.active_after == e.active_before for e in completed)
    assert run.communication[-1] == len(completed)  # sigma_max only: one real per round


def test_dis_kernel_ucb_posterior_updates_equal_the_exact_posterior():
    from dpfed.duets.baseline import PosteriorState

    objective = make_objective("branin", 80, seed=3)
    rng = np.random.default_rng(0)
    data, y = rng.integers(0, 80, size=12), rng.standard_normal(12)
    state = PosteriorState.empty(1, 12, objective.kernel)
    state.append(objective.kernel, data[None, :5], y[None, :5], 0.2)
    for i in range(5, 12):
        state.append(objective.kernel, data[None, i : i + 1], y[None, i : i + 1], 0.2)
    gram = objective.kernel[np.ix_(data, data)] + 0.2 * np.eye(12)
    mean = objective.kernel[data].T @ np.linalg.solve(gram, y)
    np.testing.assert_allclose(state.mean[0], mean, atol=1e-8)
    exact = exact_posterior_variance(objective.kernel, data, np.arange(80), 0.2)
    np.testing.assert_allclose(state.var[0], exact, atol=1e-8)


def test_dis_kernel_ucb_communication_and_n_kernel_ucb_silence():
    import math

    from dpfed.duets.baseline import run_dis_kernel_ucb

    config = DuetsConfig(objective="hartmann4", candidates=300, num_agents=4, horizon=30)
    run = run_dis_kernel_ucb(config, seed=0, threshold=2.0)
    assert run.parameters["synchronisations"] >= 1
    per_sample = 5  # d + 1 reals per raw sample; up: own samples, down: all N agents' samples
    assert run.communication[-1] % per_sample == 0
    up, down = run.uplink.sum() / per_sample, run.downlink.sum() / per_sample
    assert down == 4 * up
    assert run_dis_kernel_ucb(config, seed=0, threshold=math.inf).communication[-1] == 0
