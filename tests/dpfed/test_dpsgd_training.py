"""DP-SGD on opacus with canaries (dpfed.dpsgd): the Dirac gradient canary, the recorded updates' laws,
opacus's record, the planted half noise, bad set-ups."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from accounting.errors import ConfigurationError
from accounting.registry import account_all
from dpfed.dpsgd import breast_cancer_setup
from dpfed.dpsgd.canaries import CANARY_MAGNITUDE, CanaryCoordinates, canary_inputs, canary_loss
from dpfed.dpsgd.planted import scaled_noise
from dpfed.dpsgd.train import train_gradient_canaries
from tests.dpfed.user_dpsgd_setup import digits_mlp_setup


@pytest.mark.parametrize("make_setup", [breast_cancer_setup, digits_mlp_setup])
def test_gradient_canary_is_a_dirac_on_its_own_coordinate(make_setup):
    from opacus import GradSampleModule

    setup = make_setup()
    canaries = 5
    included = torch.tensor([True, False, True, True, False])
    inputs, labels, flags = canary_inputs(setup.features[:7], setup.labels[:7], canaries, included)
    model = GradSampleModule(CanaryCoordinates(setup.model_factory(), setup.features.shape[1], canaries),
                             loss_reduction="sum")
    canary_loss(setup.loss, model(inputs), labels, flags).backward()
    canary_rows = flags.numpy()
    per_example = {name: p.grad_sample.reshape(len(inputs), -1).numpy() for name, p in model.named_parameters()}
    canary_grad = per_example.pop("_module.canary.weight")
    expected = np.zeros((len(inputs), canaries))
    expected[canary_rows, np.flatnonzero(included.numpy())] = -CANARY_MAGNITUDE  # d(-w_k M)/dw_k
    np.testing.assert_array_equal(canary_grad, expected)  # real rows: exactly zero on every canary coordinate
    for name, grads in per_example.items():  # canary rows: exactly zero on the model
        assert np.all(grads[canary_rows] == 0.0), name
        assert np.any(grads[~canary_rows] != 0.0), name


def test_recorded_updates_follow_the_subsampled_gaussian_laws():
    # Each check fails a correct implementation with probability <= 1e-3 (fixed seed, so deterministic).
    setup = breast_cancer_setup(epochs=2)
    absent = train_gradient_canaries(setup, 1500, np.zeros(1500, bool), seed=11).normalised_updates()
    present = train_gradient_canaries(setup, 1500, np.ones(1500, bool), seed=12).normalised_updates()
    assert absent.shape == present.shape == (setup.steps, 1500)
    assert stats.kstest(absent.ravel(), "norm").pvalue > 1e-3
    q, mu = setup.sample_rate, 1.0 / setup.noise_multiplier

    def mixture_cdf(x):
        return (1 - q) * stats.norm.cdf(x) + q * stats.norm.cdf(x - mu)

    assert stats.kstest(present.ravel(), mixture_cdf).pvalue > 1e-3


def test_opacus_record_matches_the_setup_and_its_accountant_agrees_with_ours():
    setup = breast_cancer_setup(epochs=3)
    run = train_gradient_canaries(setup, 4, np.ones(4, bool), seed=1)
    assert (run.opacus.noise_multiplier, run.opacus.sample_rate, run.opacus.steps) == (
        setup.noise_multiplier, setup.sample_rate, setup.steps)
    (pld,) = account_all(setup.mechanism(), 1e-5, names=["pld"])
    assert setup.opacus_epsilon(1e-5, "prv") == pytest.approx(pld.epsilon, rel=0.02)  # two tight accountants
    assert setup.opacus_epsilon(1e-5, "rdp") >= pld.epsilon  # RDP is an upper bound, never tighter


def test_half_noise_halves_the_noise_behind_opacus_back():
    # chi-square test of the variance: fails a correct patch with probability < 1e-6
    setup = breast_cancer_setup(epochs=1)
    with scaled_noise(0.5):
        run = train_gradient_canaries(setup, 2000, np.zeros(2000, bool), seed=5)
    updates = run.normalised_updates().ravel()
    assert run.opacus.noise_multiplier == setup.noise_multiplier  # opacus still reports the full noise
    assert abs(updates.std() - 0.5) < 0.02
    from opacus.optimizers import optimizer as dp_optimizer

    assert dp_optimizer._generate_noise.__name__ == "_generate_noise"  # restored after the block


def test_bad_setups_are_configuration_errors():
    with pytest.raises(ConfigurationError, match="sample_rate"):
        breast_cancer_setup(sample_rate=0.3)
    with pytest.raises(ConfigurationError, match="noise_multiplier"):
        breast_cancer_setup(noise_multiplier=0.0)
    with pytest.raises(ConfigurationError, match="canaries"):
        train_gradient_canaries(breast_cancer_setup(), 3, np.ones(2, bool), seed=0)
