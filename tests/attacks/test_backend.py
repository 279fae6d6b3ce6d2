"""The PyTorch backend: the same mechanisms and scores on torch tensors (CPU here; GPU tests marked).

Law comparisons use two-sample Kolmogorov-Smirnov tests at level 0.001 with fixed seeds (false-failure
probability at most 0.001 each).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from accounting.errors import ConfigurationError
from attacks.attack import collect_scores, run_attack
from attacks.backend import TorchRandom, on_backend, to_numpy
from attacks.estimators.grid import pilot_grid
from attacks.probes import get_probe
from reports.cli import main

LEVEL = 1e-3


def _torch_probe(name, **params):
    return on_backend(get_probe(name, **params), "torch", "cpu")


@pytest.mark.parametrize(
    "name, params",
    [
        ("gaussian", {}),
        ("laplace", {}),
        ("subsampled-gaussian", {"rounds": 3}),
        ("subsampled-gaussian", {"rounds": 2, "others": 1, "weights": [[0.25, 1.0], [1.0, 0.5]], "batch_axes": 1}),
        ("fts-server", {"rounds": 5}),
    ],
)
def test_torch_scores_have_the_numpy_law(name, params):
    numpy_probe, torch_probe = get_probe(name, **params), _torch_probe(name, **params)
    for world in (0, 1):
        reference = numpy_probe.scores(world, 4000, np.random.default_rng(10 + world))
        scores = torch_probe.scores(world, 4000, TorchRandom(np.random.SeedSequence(20 + world)))
        assert isinstance(scores, torch.Tensor) and scores.dtype == torch.float64
        assert stats.ks_2samp(reference, to_numpy(scores)).pvalue > LEVEL


def test_torch_streams_are_per_batch_and_reproducible():
    draw = [TorchRandom(np.random.SeedSequence(s)).standard_normal(5) for s in (1, 1, 2)]
    assert torch.equal(draw[0], draw[1]) and not torch.equal(draw[0], draw[2])


def test_same_seed_same_torch_scores_on_every_executor():
    from distributed import LocalCluster

    from attacks.executors import InProcessExecutor

    probe = _torch_probe("subsampled-gaussian", rounds=2)
    probe.batch_size = 1500
    reference = collect_scores(probe, 3000, 42)

    class Backwards(InProcessExecutor):
        def run(self, probe, tasks, reduce=None):
            yield from super().run(probe, list(tasks)[::-1], reduce)

    others = [collect_scores(probe, 3000, 42, executor=Backwards())]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        others.append(collect_scores(probe, 3000, 42, executor="dask", scheduler=cluster.scheduler_address))
    for other in others:
        assert np.array_equal(reference[0], other[0]) and np.array_equal(reference[1], other[1])
    numpy_scores = collect_scores(get_probe("subsampled-gaussian", rounds=2), 3000, 42, batch_size=1500)
    assert not np.array_equal(reference[0], numpy_scores[0])  # the backends draw different numbers


def test_counting_torch_scores_matches_counting_numpy_scores():
    rng = np.random.default_rng(3)
    grid = pilot_grid(rng.normal(size=2000), rng.normal(1.0, 1.0, 2000), 10_000, 10_000, 1e-3, 0.95)
    values = rng.normal(size=10_000)
    on_torch, on_numpy = grid.count(torch.from_numpy(values)), grid.count(values)
    bins = grid.edges.size + 1
    assert np.array_equal(on_torch[:bins], on_numpy[:bins])  # the histogram exactly
    assert on_torch[bins:] == pytest.approx(on_numpy[bins:], rel=1e-12)  # sums up to summation order


def test_torch_attack_gives_valid_bounds_through_counts():
    result = run_attack("gaussian", 50_000, seed=4, reduction="counts", backend="torch")
    # true epsilon 2: a valid 95% bound exceeds it with probability at most 0.05
    assert 0.5 < result.best_rigorous() <= 2.0 and result.backend == "torch"


@pytest.mark.parametrize(
    "argv, field",
    [
        (["gaussian", "--backend", "torch", "--device", "tpu"], "device"),
        (["bug-weak-noise", "--backend", "torch"], "backend"),
        (["empty-sample", "--backend", "torch"], "backend"),
        (["gaussian", "--device", "cuda"], "device"),
    ],
)
def test_backend_errors_are_one_line_exit_2(capsys, argv, field):
    assert main(["attack", *argv, "--trials", "1000", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and field in err


def test_a_numpy_only_probe_is_refused_under_the_name_it_was_asked_for(capsys):
    # bug-uniform-fallback is the empty-sample probe with a planted bug: the error names what the user typed
    assert main(["attack", "bug-uniform-fallback", "--backend", "torch", "--trials", "1000", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "'bug-uniform-fallback' has no torch path" in err and "empty-sample" not in err


def test_cuda_without_a_gpu_is_refused():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ConfigurationError, match="CUDA"):
        on_backend(get_probe("gaussian"), "torch", "cuda")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gaussian_probe_on_the_gpu():
    probe = on_backend(get_probe("gaussian"), "torch", "cuda")
    scores = probe.scores(1, 100_000, TorchRandom(np.random.SeedSequence(5), "cuda"))
    assert scores.device.type == "cuda"
    reference = get_probe("gaussian").scores(1, 100_000, np.random.default_rng(5))
    assert stats.ks_2samp(reference, to_numpy(scores)).pvalue > LEVEL
    result = run_attack("gaussian", 10**7, seed=6, reduction="counts", backend="torch", device="cuda")
    # "<= 2.0" (the true epsilon) is the rigorous bound's 95% statement: false-failure probability <= 0.05 for
    # a random seed; "1.5 <" is power (Clopper-Pearson already reaches 1.56 +- 0.04 at 10^6 trials,
    # test_estimators_validity.py), far above 1.5 at 10^7.
    assert 1.5 < result.best_rigorous() <= 2.0


def test_device_counts_bin_ties_and_edges_as_the_sorted_counts():
    # Scores exactly on the edges and repeated: bucketize must put a score equal to an edge in the bin
    # below it, as the sorted counts (binary search, side="right") do.
    edges = np.array([-1.0, 0.0, 0.5, 2.0])
    grid = pilot_grid(np.linspace(-3, 3, 50), np.linspace(-2, 4, 50), 1000, 1000, 1e-5, 0.95)
    rng = np.random.default_rng(4)
    scores = np.concatenate([rng.choice(np.concatenate([edges, grid.edges]), 300), rng.normal(size=700)])
    from attacks.estimators.grid import ThresholdGrid

    for g in (ThresholdGrid(edges, np.array([0]), np.array(["in-high"])), grid):
        expected, got = g.count(scores), g.count(torch.tensor(scores))
        np.testing.assert_array_equal(got[: g.edges.size + 2], expected[: g.edges.size + 2])  # bins and n
        np.testing.assert_allclose(got, expected, rtol=1e-12)  # sums in another order; min and max exact


def test_cuda_batches_follow_free_memory():
    from attacks.backend import device_batch_size
    from attacks.run_plan import plan_run

    probe = get_probe("gaussian")
    assert device_batch_size(probe, "cpu") is None  # a cpu keeps the probe's batch size
    size = device_batch_size(probe, "cuda", free=80 * 2**30)
    assert size == 2**29 and size * probe.device_bytes_per_trial() <= 0.5 * 80 * 2**30  # a power of two that fits
    assert device_batch_size(probe, "cuda", free=80 * 2**30 + 12345) == size  # stable under small changes
    plan = plan_run(probe, 10**10, workers=1, memory=128 * 2**30, device_batch=size)
    assert plan.batch_size == size and plan.reduction == "counts" and plan.batches == -(-(10**10) // size)
    small_host = plan_run(probe, 10**10, workers=1, memory=8 * 2**30, device_batch=size)
    assert small_host.batch_size < size  # still capped by host memory
    fts = get_probe("fts-end-to-end")
    runs = device_batch_size(fts, "cuda", free=40 * 2**30)
    assert runs * fts.device_bytes_per_trial() <= 20 * 2**30 < 2 * runs * fts.device_bytes_per_trial()
