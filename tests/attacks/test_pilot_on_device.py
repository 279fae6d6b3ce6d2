"""The pilot sorted where its scores live: ``pilot_grid`` of PyTorch tensors (sorted and searched with
torch; CPU tensors here, the same code as on a CUDA device) chooses exactly the grid NumPy chooses from
the same scores, brings back only small arrays, and ``fix_grid`` keeps device scores off the host.

Exact equality is expected, not a tolerance: every value the grid reads from the sorted tensor is one of
the scores themselves (order statistics, a strided subsample whose quantiles NumPy computes on the
host) and every rate is an integer count divided as in NumPy. The cases use fixed seeds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attacks.batches as batches
from attacks.backend import on_backend, pilot_device
from attacks.estimators import grid as grid_module
from attacks.estimators.grid import pilot_grid
from attacks.estimators.pilot_scores import SortedPilot
from attacks.executors import InProcessExecutor, root_seed
from attacks.probes import get_probe
from attacks.run_plan import plan_run


def _pilots(kind: str, rng):
    n0, n1 = 5003, 7001
    if kind == "normal":
        return rng.normal(size=n0), rng.normal(1.3, 1.0, n1)
    if kind == "ties":  # many repeated values, some on both worlds
        return np.round(rng.normal(size=n0), 1), np.round(rng.normal(0.8, 1.0, n1), 1)
    if kind == "atoms":  # a handful of values: tails without spread (no extrapolation)
        return rng.integers(0, 5, n0).astype(float), rng.integers(1, 7, n1).astype(float)
    if kind == "laplace":
        return rng.laplace(size=n0), rng.laplace(1.0, 1.0, n1)
    if kind == "constant":
        return np.zeros(n0), np.ones(n1)
    return rng.normal(size=15), rng.normal(1.0, 1.0, 9)  # "tiny": too few scores for a tail fit


def _same_grid(a, b) -> bool:
    return (
        np.array_equal(a.edges, b.edges)
        and np.array_equal(a.test_edges, b.test_edges)
        and np.array_equal(a.test_directions, b.test_directions)
    )


@pytest.mark.parametrize("kind", ["normal", "ties", "atoms", "laplace", "constant", "tiny"])
@pytest.mark.parametrize("budget", [10_000, 10**10])
@pytest.mark.parametrize("sample", [None, 997])  # 997: the pooled quantiles from a strided subsample
def test_torch_pilot_gives_the_numpy_grid(kind, budget, sample, monkeypatch):
    if sample is not None:
        monkeypatch.setattr(grid_module, "POOLED_QUANTILE_SAMPLE", sample)
    out_pilot, in_pilot = _pilots(kind, np.random.default_rng(16))
    on_numpy = pilot_grid(out_pilot, in_pilot, budget, budget, 1e-5, 0.95)
    on_torch = pilot_grid(torch.from_numpy(out_pilot), torch.from_numpy(in_pilot), budget, budget, 1e-5, 0.95)
    assert _same_grid(on_numpy, on_torch)
    assert on_numpy.test_edges.size > 0 and on_numpy.edges.size >= 2


def test_torch_pilot_is_sorted_with_torch_and_only_small_arrays_come_back(monkeypatch):
    monkeypatch.setattr(grid_module, "POOLED_QUANTILE_SAMPLE", 1000)
    rng = np.random.default_rng(17)
    out_pilot, in_pilot = torch.from_numpy(rng.normal(size=50_000)), torch.from_numpy(rng.normal(1, 1, 50_000))
    assert isinstance(SortedPilot(out_pilot).sorted, torch.Tensor)
    copied, real_cpu = [], torch.Tensor.cpu

    def cpu(self, *args, **kwargs):
        copied.append(self.numel())
        return real_cpu(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "cpu", cpu)
    sorts, real_sort = [], torch.sort

    def sort(values, *args, **kwargs):
        sorts.append(values.numel())
        return real_sort(values, *args, **kwargs)

    monkeypatch.setattr(torch, "sort", sort)
    pilot_grid(out_pilot, in_pilot, 10**10, 10**10, 1e-5, 0.95)
    assert sorts[:2] == [50_000, 50_000]  # both worlds sorted by torch
    assert copied and max(copied) <= 2 * 1000  # the pooled subsample is the largest copy


def _gaussian_plan(batch_size: int = 7000):
    probe = on_backend(get_probe("gaussian"), "torch", "cpu")
    return probe, plan_run(probe, 200_000, batch_size=batch_size, reduction="counts")


def test_fix_grid_with_the_pilot_on_the_device_gives_the_host_grid(monkeypatch):
    probe, plan = _gaussian_plan()
    assert plan.pilot_trials == 20_000  # three pilot batches a world, the last one shorter
    arguments = (probe, plan, root_seed(5), InProcessExecutor(), None, 1e-5, 0.95, False)
    on_host = batches.fix_grid(*arguments)  # torch on a cpu: the host path
    received = []
    real_pilot_grid = batches.pilot_grid

    def spy(out_pilot, in_pilot, *args, **kwargs):
        received.append((type(out_pilot), type(in_pilot)))
        return real_pilot_grid(out_pilot, in_pilot, *args, **kwargs)

    monkeypatch.setattr(batches, "pilot_grid", spy)
    monkeypatch.setattr(batches, "pilot_device", lambda probe, trials: "cpu")  # as a CUDA device would
    on_device = batches.fix_grid(*arguments)
    assert received == [(torch.Tensor, torch.Tensor)]
    assert _same_grid(on_host, on_device)


def test_pilot_device_only_for_a_cuda_pilot_that_fits():
    numpy_probe, torch_cpu = get_probe("gaussian"), on_backend(get_probe("gaussian"), "torch", "cpu")
    assert pilot_device(numpy_probe, 10**6, free=80 * 2**30) is None
    assert pilot_device(torch_cpu, 10**6) is None
    cuda = get_probe("gaussian")
    cuda.array_backend, cuda.device = "torch", "cuda"  # as on_backend sets them where CUDA exists
    assert pilot_device(cuda, 32_000_000, free=80 * 2**30) == "cuda"  # 1.5 GB of the 40 GiB left free
    assert pilot_device(cuda, 32_000_000, free=2 * 2**30) is None  # more than the 1 GiB left free


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_pilot_gives_the_numpy_grid_and_stays_on_the_device(monkeypatch):
    for kind in ("normal", "ties", "atoms"):
        out_pilot, in_pilot = _pilots(kind, np.random.default_rng(18))
        on_numpy = pilot_grid(out_pilot, in_pilot, 10**10, 10**10, 1e-5, 0.95)
        on_cuda = pilot_grid(
            torch.from_numpy(out_pilot).cuda(), torch.from_numpy(in_pilot).cuda(), 10**10, 10**10, 1e-5, 0.95
        )
        assert _same_grid(on_numpy, on_cuda)
    probe = on_backend(get_probe("gaussian"), "torch", "cuda")
    plan = plan_run(probe, 200_000, batch_size=7000, reduction="counts")
    received = []
    real_pilot_grid = batches.pilot_grid

    def spy(out_pilot, in_pilot, *args, **kwargs):
        received.append((out_pilot.device.type, in_pilot.device.type))
        return real_pilot_grid(out_pilot, in_pilot, *args, **kwargs)

    monkeypatch.setattr(batches, "pilot_grid", spy)
    batches.fix_grid(probe, plan, root_seed(5), InProcessExecutor(), None, 1e-5, 0.95, False)
    assert received == [("cuda", "cuda")]
