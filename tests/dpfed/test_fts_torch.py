"""DP-FTS-DE batches on PyTorch tensors: the same runs as on NumPy for the same seeds.

Both backends draw the same per-run NumPy streams, so indices, masks and queries agree exactly, and the
float64 messages (uploads, broadcasts) agree up to the order of floating-point sums (compared to 1e-9
of their scale). The one inexact step is the float32 scoring of candidate points: the two backends' cos
and sums differ by about one float32 ulp, so an argmax between two candidates whose scores agree to
about 1e-7 can flip and the run then takes another path. The exact statement is therefore tested with
float64 scoring (a flip then needs two scores within about 1e-16 of each other: negligible); with the
default float32 scoring the flip rate was measured (3 of 100 full 60-round end-to-end runs diverge, about
1e-5 per argmax) and the tests below expect at most a few hundredths of a diverging run each.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dpfed.fts.algorithm as algorithm
from accounting.errors import ConfigurationError
from attacks.attack import collect_scores
from attacks.backend import TorchRandom, on_backend
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


@pytest.fixture
def float64_scoring(monkeypatch):
    monkeypatch.setattr(algorithm, "SCORING_DTYPE", np.float64)


@pytest.mark.parametrize("changes", CASES)
def test_torch_cpu_runs_are_the_numpy_runs(changes, float64_scoring):
    config = FTSConfig(**{**SHORT, **changes})
    seeds = [3, 4, 5]
    same_runs(run_fts_batch(config, seeds), run_fts_batch(config, seeds, backend="torch", device="cpu"))


def test_canary_hook_and_final_release_on_torch(float64_scoring):
    config = FTSConfig(**SHORT, planted_bug="unnoised-final-aggregate").with_canary_slot()
    objective = make_objective(config, np.random.default_rng(0))
    canary = np.zeros(config.num_features)
    canary[0] = 2.0

    def hook(round_index, uploads, present):  # a malicious agent 0 doubling its upload
        uploads[0] *= 2.0
        return uploads

    options = dict(objective=objective, canary_vector=canary, upload_hook=hook)
    reference = run_fts_batch(config, [7, 8], **options)
    on_torch = run_fts_batch(config, [7, 8], backend="torch", **options)
    same_runs(reference, on_torch)
    assert on_torch.final_release.shape == (2, 2, config.num_features)


def test_float32_scoring_rarely_changes_a_run():
    # Default scoring. A run diverges only through an argmax flip on a float32 near-tie; measured rate
    # about 1e-5 per argmax (3 of 100 runs of 60 rounds x 29 agents x 2 maximisations), so here
    # (6 runs x 6 rounds x 5 agents x 4 argmaxes per case) about 0.01 diverging runs per case are
    # expected and the fixed seeds below have none; agreeing runs must then agree to 1e-9 of scale.
    for changes in CASES[:2]:
        config = FTSConfig(**{**SHORT, **changes})
        seeds = list(range(6))
        same_runs(run_fts_batch(config, seeds), run_fts_batch(config, seeds, backend="torch"))


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
def test_end_to_end_probe_scores_are_the_same_on_both_backends(params):
    # Through the executors' seeding (a TorchRandom per batch on torch), default float32 scoring:
    # 2 x 6 runs of 3 rounds x 29 agents x 2 maximisations, about 0.02 flips expected at the measured
    # rate (none with this seed).
    reference = get_probe("fts-end-to-end", rounds=3, **params)
    probe = on_backend(get_probe("fts-end-to-end", rounds=3, **params), "torch", "cpu")
    expected, scores = collect_scores(reference, 6, 11, batch_size=3), collect_scores(probe, 6, 11, batch_size=3)
    for world in (0, 1):
        np.testing.assert_allclose(scores[world], expected[world], rtol=1e-9, atol=1e-12)


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
def test_cuda_runs_are_the_numpy_runs(changes, float64_scoring):
    config = FTSConfig(**{**SHORT, **changes})
    same_runs(run_fts_batch(config, [3, 4, 5]), run_fts_batch(config, [3, 4, 5], backend="torch", device="cuda"))
    probe = on_backend(get_probe("fts-end-to-end", rounds=4), "torch", "cuda")
    assert probe.runs_per_call() >= 1
    expected = get_probe("fts-end-to-end", rounds=4).scores(1, 6, np.random.default_rng(np.random.SeedSequence(2)))
    scores = probe.scores(1, 6, TorchRandom(np.random.SeedSequence(2), "cuda"))
    np.testing.assert_allclose(scores, expected, rtol=1e-9, atol=1e-12)
