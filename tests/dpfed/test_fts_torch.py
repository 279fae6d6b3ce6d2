"""DP-FTS-DE batches on PyTorch tensors.

On torch the runs of a call draw their random numbers together on the device
(``dpfed.device_random.BatchStreams``), so the same seeds give the same runs within the torch backend
(tested exactly here) but other runs than on NumPy (another generator): the backends are compared
through what does not depend on the draws (shapes, dtypes, the server's sampling rate, the noise
scale of the broadcasts), and through the NumPy-free arithmetic (the same objective values for the same
points).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from accounting.errors import ConfigurationError
from attacks.attack import collect_scores
from attacks.backend import on_backend
from attacks.probes import get_probe
from dpfed.fts import FTSConfig
from dpfed.fts.algorithm import run_fts_batch
from dpfed.fts.memory import bytes_per_run, runs_within
from dpfed.objectives import make_objective

SHORT = dict(
    objective="synthetic",
    dim=1,
    num_agents=5,
    rounds=6,
    init_points=3,
    num_features=12,
    lengthscale=0.1,
    local_lengthscale=0.1,
    local_num_features=8,
    gp_lengthscale=0.1,
    obs_noise_var=1e-4,
    candidates=32,
    refine_steps=1,
    refine_samples=4,
    subregions=2,
    weight_hold=2,
    weight_decay=3,
)
EXACT = ("queries", "observed", "true_values", "utility_per_agent", "used_broadcast", "sampled")
FLOATS = ("uploads", "broadcasts", "final_release")
CASES = [
    dict(),  # DP-FTS-DE; shared model in Matheron form (M > observations), local in weight space
    dict(num_features=4, dim=2, subregions=4),  # both models in weight space, d = 2, P = 4
    dict(algorithm="fts-de"),
    dict(algorithm="ts", explore_uniform=True),
    dict(algorithm="dp-fts", planted_bug="renormalise-sampled"),
    dict(rate=0.05, empty_sample_fallback="uniform"),  # empty samples: per-run fallback draws
]


def same_runs(numpy_batch, torch_batch) -> None:
    for name in EXACT:
        left, right = getattr(numpy_batch, name), getattr(torch_batch, name)
        assert (left is None) == (right is None), name
        if left is not None:
            np.testing.assert_array_equal(left, right, err_msg=name)
    for name in FLOATS:
        left, right = getattr(numpy_batch, name), getattr(torch_batch, name)
        assert (left is None) == (right is None), name
        if left is not None:
            assert isinstance(right, np.ndarray) and right.dtype == np.float64
            np.testing.assert_allclose(right, left, rtol=0, atol=1e-9 * np.abs(left).max(), err_msg=name)


def same_shapes(numpy_batch, torch_batch) -> None:
    for name in EXACT + FLOATS:
        left, right = getattr(numpy_batch, name), getattr(torch_batch, name)
        assert (left is None) == (right is None), name
        if left is not None:
            assert isinstance(right, np.ndarray) and right.shape == left.shape and right.dtype == left.dtype, name


@pytest.mark.parametrize("changes", CASES)
def test_torch_runs_repeat_for_the_same_seeds_and_have_the_numpy_shapes(changes):
    config = FTSConfig(**{**SHORT, **changes})
    seeds = [3, 4, 5]
    first = run_fts_batch(config, seeds, backend="torch", device="cpu")
    same_runs(first, run_fts_batch(config, seeds, backend="torch", device="cpu"))
    same_shapes(run_fts_batch(config, seeds), first)
    other = run_fts_batch(config, [6, 7, 8], backend="torch", device="cpu")
    assert not np.array_equal(other.queries, first.queries)  # other seeds: other runs
    assert np.all((first.queries >= 0) & (first.queries <= 1))


def test_canary_hook_and_final_release_on_torch():
    config = FTSConfig(**SHORT, planted_bug="unnoised-final-aggregate").with_canary_slot()
    objective = make_objective(config, np.random.default_rng(0))
    canary = np.zeros(config.num_features)
    canary[0] = 2.0
    seen = []

    def hook(round_index, uploads, present):  # a malicious agent 0 doubling its upload
        seen.append(uploads[0].copy())
        uploads[0] *= 2.0
        return uploads

    options = dict(objective=objective, canary_vector=canary, upload_hook=hook)
    on_torch = run_fts_batch(config, [7, 8], backend="torch", **options)
    assert on_torch.final_release.shape == (2, 2, config.num_features)
    np.testing.assert_array_equal(on_torch.uploads[:, :, config.num_agents], np.broadcast_to(canary, (2, 6, 12)))
    by_run_then_round = np.stack(seen).reshape(6, 2, 12).transpose(1, 0, 2)  # hook calls: round by round
    np.testing.assert_allclose(on_torch.uploads[:, :, 0], 2 * by_run_then_round)


def test_torch_release_noise_has_the_configured_scale():
    # Broadcast blocks minus the weighted clipped sampled uploads are the release noise (times 1/q): its
    # per-block std must be block_noise_std. Each of the 6 x 2 estimates pools 40 runs x 12 coordinates:
    # relative standard error about 1/sqrt(960) = 3.2%, so the 20% tolerance (6 errors) fails with
    # probability below 1e-8 in all.
    from dpfed.fts.server import Server

    config = FTSConfig(**SHORT)
    batch = run_fts_batch(config, list(range(40)), backend="torch")
    server = Server(np.arange(config.declared_population) % 2, 2, config.mechanism(), 15.0, 2, 3)
    mechanism = config.mechanism()
    for t in range(config.rounds):
        w = server.weights(t)
        clipped = mechanism.clip_vectors(batch.uploads[:, t]) * batch.sampled[:, t, :, None]
        noise = batch.broadcasts[:, t] - (w @ clipped) / mechanism.rate  # (K, P, M)
        expected = batch.block_noise_std[t]
        np.testing.assert_allclose(noise.std(axis=(0, 2)), expected, rtol=0.2)


def test_synthetic_objective_values_are_the_same_on_both_backends():
    from dpfed.arrays import ArrayBackend
    from dpfed.fts.objectives import TrialObjectives
    from dpfed.objectives.synthetic import SyntheticGP

    objective = SyntheticGP(5, 2, np.random.default_rng(1), num_basis=16)
    arrays = ArrayBackend("torch", "cpu")
    device = TrialObjectives(None, objective, None, arrays)
    x = np.random.default_rng(2).random((3, 5, 4, 2))
    true = arrays.to_numpy(device.device_functions(arrays.asarray(x)))
    np.testing.assert_allclose(true, objective.true_values(x), rtol=1e-12, atol=1e-12)
    best = true.max(axis=2)
    np.testing.assert_allclose(arrays.to_numpy(device.utility(arrays.asarray(best))), objective.utility(best))


def test_bad_backend_or_device_is_a_configuration_error():
    config = FTSConfig(**SHORT)
    with pytest.raises(ConfigurationError, match="backend"):
        run_fts_batch(config, [1], backend="jax")
    with pytest.raises(ConfigurationError, match="device"):
        run_fts_batch(config, [1], device="cuda")  # numpy runs on the cpu only
    if not torch.cuda.is_available():
        with pytest.raises(ConfigurationError, match="CUDA"):
            run_fts_batch(config, [1], backend="torch", device="cuda")


@pytest.mark.parametrize(
    "params",
    [
        dict(score="canary"),
        dict(score="sampled-weight", planted_bug="renormalise-sampled"),
        dict(score="final-release", planted_bug="unnoised-final-aggregate"),
    ],
)
def test_end_to_end_probe_scores_repeat_on_torch(params):
    # Through the executors' seeding (a TorchRandom per batch): same seed and batch size, same scores.
    probe = on_backend(get_probe("fts-end-to-end", rounds=3, **params), "torch", "cpu")
    first, again = collect_scores(probe, 6, 11, batch_size=3), collect_scores(probe, 6, 11, batch_size=3)
    for world in (0, 1):
        np.testing.assert_array_equal(first[world], again[world])
        assert np.all(np.isfinite(first[world]))


def test_runs_per_call_from_free_memory():
    probe = get_probe("fts-end-to-end")
    assert probe.runs_per_call() == 25  # on a cpu: unchanged
    config = probe._config
    per_run = bytes_per_run(config)
    # the estimate covers at least the square roots of both posteriors and the kept broadcasts
    floor = 8 * (2 * config.num_agents * config.num_features**2 + config.rounds * 4 * config.num_features)
    assert per_run >= floor
    assert runs_within(10 * per_run, config, share=0.5) == 5
    assert runs_within(0, config) == 1


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("changes", CASES[:2] + CASES[4:])
def test_cuda_runs_repeat(changes):
    config = FTSConfig(**{**SHORT, **changes})
    first = run_fts_batch(config, [3, 4, 5], backend="torch", device="cuda")
    same_runs(first, run_fts_batch(config, [3, 4, 5], backend="torch", device="cuda"))
    same_shapes(run_fts_batch(config, [3, 4, 5]), first)


def test_torch_rounds_make_no_host_copies_and_no_synchronisation(monkeypatch):
    # On a GPU each of these is a host-device copy or a synchronisation: a round must make none of them
    # (only the setup and the final result do). Counted on the cpu by wrapping torch's entry points.
    import dpfed.fts.algorithm as algorithm

    config = FTSConfig(**SHORT).with_canary_slot()
    objective = make_objective(config, np.random.default_rng(0))
    canary = np.zeros(config.num_features)
    calls = []
    watched = {name: getattr(torch, name) for name in ("asarray", "tensor", "as_tensor", "from_numpy")}
    methods = {
        name: getattr(torch.Tensor, name)
        for name in ("item", "__bool__", "__float__", "__int__", "cpu", "numpy", "tolist")
    }
    original_round = algorithm._BatchedRun.round

    def counting(name, function):
        def wrapper(*args, **kwargs):
            if name not in watched or not isinstance(args[0], torch.Tensor):  # tensors stay where they are
                calls.append(name)
            return function(*args, **kwargs)

        return wrapper

    def round_watched(self, j):
        for name, function in watched.items():
            monkeypatch.setattr(torch, name, counting(name, function))
        for name, function in methods.items():
            monkeypatch.setattr(torch.Tensor, name, counting(name, function))
        try:
            original_round(self, j)
        finally:
            for name, function in watched.items():
                monkeypatch.setattr(torch, name, function)
            for name, function in methods.items():
                monkeypatch.setattr(torch.Tensor, name, function)

    monkeypatch.setattr(algorithm._BatchedRun, "round", round_watched)
    for changes in (dict(), dict(rate=0.05, empty_sample_fallback="uniform"), dict(planted_bug="renormalise-sampled")):
        calls.clear()
        config = FTSConfig(**{**SHORT, **changes}).with_canary_slot()
        run_fts_batch(config, [1, 2], objective=objective, canary_vector=canary, backend="torch")
        assert calls == [], (changes, sorted(set(calls)))


def test_torch_and_numpy_runs_have_the_same_score_law():
    # Other generators, same algorithm: the end-to-end probe's default (replay) scores of 4-round runs,
    # replayed on the device on torch and on the host on NumPy, must follow one law on both backends.
    # Two-sample Kolmogorov-Smirnov test per world at level 1e-3 with fixed seeds: false-failure
    # probability at most 2e-3.
    from scipy import stats

    reference = get_probe("fts-end-to-end", rounds=4)
    probe = on_backend(get_probe("fts-end-to-end", rounds=4), "torch", "cpu")
    expected, scores = collect_scores(reference, 150, 21, batch_size=50), collect_scores(probe, 150, 22, batch_size=50)
    for world in (0, 1):
        assert stats.ks_2samp(scores[world], expected[world]).pvalue > 1e-3
    assert np.mean(scores[1]) > np.mean(scores[0])  # the canary shows on torch too (about 2.6 standard errors)
