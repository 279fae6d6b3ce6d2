"""The batched DP-SGD trainer (``dpfed.dpsgd.batched``) against opacus's own run of the same set-up."""

from __future__ import annotations

import pytest
import torch

from dpfed.dpsgd import breast_cancer_setup
from dpfed.dpsgd.batched import final_models
from dpfed.dpsgd.train import train_input_canary

pytest.importorskip("opacus")


def test_batched_update_equals_opacus_with_every_record_in_every_batch():
    """Sample rate 1 (every record in every batch: the sampling fixed) and noise 1e-9 of the clip: both
    trainings are deterministic up to noise of order 1e-9 * lr, so the final parameters of opacus's run and
    of each batched model agree (clipping, summing and the step size are the same computation)."""
    setup = breast_cancer_setup(sample_rate=1.0, noise_multiplier=1e-9, epochs=5, clip=0.5, learning_rate=0.5)
    reference, _ = train_input_canary(setup, setup.features[0], setup.labels[0], False, seed=1, init_seed=0)
    template, params = final_models(setup, setup.features, setup.labels, 3, torch.Generator().manual_seed(0))
    for name, value in reference.named_parameters():
        for m in range(3):
            torch.testing.assert_close(params[name][m], value.detach(), rtol=1e-4, atol=1e-5)


def test_batched_noise_has_the_configured_scale():
    """All features zero: every weight's per-example gradient is exactly zero, so after the run a weight has
    moved by lr / E[B] times the sum of the steps' noise, N(0, steps (z C)^2). Over 4000 models x 30 weights
    the sample standard deviation is within 3% of its expected value except with probability below 1e-6
    (chi-square with 120 000 degrees of freedom: relative sd 0.2%)."""
    setup = breast_cancer_setup(sample_rate=0.5, noise_multiplier=2.0, epochs=1, clip=1.0, learning_rate=0.5)
    with torch.random.fork_rng():
        torch.manual_seed(2)  # the batched trainer's initialisation (init_seed 0)
        start = setup.model_factory().weight.detach()
    _, params = final_models(setup, setup.features * 0, setup.labels, 4000, torch.Generator().manual_seed(3))
    moved = params["weight"] - start
    expected = setup.learning_rate / setup.expected_batch_size * setup.noise_multiplier * setup.clip
    assert abs(moved.std().item() / (expected * setup.steps ** 0.5) - 1) < 0.03
