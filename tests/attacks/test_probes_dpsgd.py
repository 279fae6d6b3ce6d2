"""DP-SGD probes on opacus: registry, the three views' scores, null worlds, the planted half noise, a
user's own set-up, one-run audits and the CLI. Tiny trainings (one or two steps)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from accounting.errors import ConfigurationError
from attacks.attack import run_attack
from attacks.estimators import clopper_pearson_lower_bound
from attacks.probes import PROBES, get_probe
from attacks.probes.dpsgd_one_run import one_run_gradient_canaries
from reports.cli import main

FAST = {"epochs": 1}
USER_SETUP = "tests.dpfed.user_dpsgd_setup:digits_mlp_setup"


@pytest.mark.parametrize("name, trials, extra", [
    ("dpsgd-all-iterates", 300, {"canaries_per_run": 200}),
    ("dpsgd-last-iterate", 300, {"canaries_per_run": 200}),
    ("bug-dpsgd-half-noise", 300, {"canaries_per_run": 200}),
    ("dpsgd-final-model", 3, {}),
])
def test_probe_scores_shape_and_metadata(name, trials, extra):
    probe = get_probe(name, **FAST, **extra)
    rng = np.random.default_rng(0)
    for world in (0, 1):
        scores = probe.scores(world, trials, rng)
        assert scores.shape == (trials,) and np.all(np.isfinite(scores))
    info = probe.metadata(1e-5)
    assert name in PROBES and info["threat_model"].split(" (")[0] in ("all iterates", "last iterate", "final model")
    # two steps at (q 1/2, z 2.64): our PLD against opacus's own PRV accountant (an independent library)
    assert info["true_epsilon"] == pytest.approx(probe.training_setup().opacus_epsilon(1e-5, "prv"), rel=0.02)
    assert info["planted_bug"] == ("half-noise" if name.startswith("bug") else None)


@pytest.mark.parametrize("name", ["dpsgd-all-iterates", "dpsgd-last-iterate"])
def test_null_worlds_give_positive_bounds_at_most_at_the_nominal_rate(name):
    # Canary never inserted: both worlds are opacus runs without it. Each audit's 95% bound is positive
    # with probability <= 5%; P[Binom(12, 0.05) >= 4] = 0.002 is this test's false-failure probability.
    # The last-iterate view (its own score) had no null-world test; the final-model view trains one model
    # per trial, too slow for 24 000 trials here.
    probe = get_probe(name, **FAST, canaries_per_run=1000)
    rng = np.random.default_rng(19)
    positives = 0
    for _ in range(12):
        out_scores, in_scores = probe.scores(0, 1000, rng), probe.scores(0, 1000, rng)
        positives += clopper_pearson_lower_bound(np.sort(out_scores), np.sort(in_scores), 1e-5).epsilon > 0
    assert positives <= 3


def test_half_noise_behind_opacus_back_is_a_violation_and_the_correct_setup_is_not():
    # One full-batch step (a Gaussian mechanism, mu = 0.76, epsilon 3.19 at 1e-5); halving the noise
    # doubles mu (epsilon 7.2). A correct run is called VIOLATION with probability <= 5%; the planted
    # bug's expected Clopper-Pearson bound at 2e4 trials is about 3.7 (fixed seed, so deterministic).
    setup = {"sample_rate": 1.0, "epochs": 1, "noise_multiplier": 1.316, "canaries_per_run": 2000}
    bug = run_attack(get_probe("bug-dpsgd-half-noise", **setup), 20_000, 5)
    correct = run_attack(get_probe("dpsgd-all-iterates", **setup), 20_000, 5)
    # the claim is the one-step Gaussian's epsilon: Balle & Wang's profile at mu = 1/1.316, solved with scipy
    mu = 1 / 1.316
    profile = lambda e: stats.norm.cdf(mu / 2 - e / mu) - math.exp(e) * stats.norm.cdf(-mu / 2 - e / mu)  # noqa: E731
    assert bug.claim_epsilon == pytest.approx(optimize.brentq(lambda e: profile(e) - 1e-5, 0.0, 50.0), abs=0.02)
    assert bug.status == "VIOLATION" and correct.status != "VIOLATION"


def test_user_setup_is_pluggable_and_bad_parameters_are_configuration_errors():
    probe = get_probe("dpsgd-all-iterates", setup=USER_SETUP, canaries_per_run=100)
    assert probe.training_setup().name == "digits MLP"
    assert probe.scores(1, 100, np.random.default_rng(1)).shape == (100,)
    with pytest.raises(ConfigurationError, match="setup"):
        get_probe("dpsgd-all-iterates", setup="no_such_module:nothing")
    with pytest.raises(ConfigurationError, match="planted_bug"):
        get_probe("dpsgd-all-iterates", planted_bug="quarter-noise")
    with pytest.raises(ConfigurationError, match="sample_rate"):
        get_probe("dpsgd-last-iterate", sample_rate=0.4)


def test_one_run_null_and_canaries_present():
    probe = get_probe("dpsgd-all-iterates", **FAST)
    # no canary inserted: at 99.9% confidence each bound is positive with probability <= 0.1%
    null = one_run_gradient_canaries(probe, 2000, seed=3, delta=1e-5, confidence=0.999, inserted=False)
    assert null.bound("one-run").epsilon == 0.0 and null.bound("fdp-one-run").epsilon == 0.0
    run = one_run_gradient_canaries(probe, 2000, seed=3, delta=1e-5)
    assert run.included.sum() == pytest.approx(1000, abs=100)  # fair coins (a 4.5-sigma band)
    assert run.opacus.steps == 2
    assert run.scores[run.included].mean() > run.scores[~run.included].mean()


def test_attack_cli_runs_the_dpsgd_config(capsys):
    code = main(["attack", "--config", "configs/attack_dpsgd.toml", "--trials", "400", "--param", "epochs=1",
                 "--param", "canaries_per_run=400", "--no-progress"])
    text = capsys.readouterr().out
    # code 1 (VIOLATION) on this correct set-up would be a false alarm: probability <= 0.05 for a random seed
    assert code in (0, 3) and "all iterates (white box)" in text and "clopper-pearson" in text


def test_attack_cli_bad_dpsgd_parameter_is_one_line_exit_2(capsys):
    code = main(["attack", "dpsgd-all-iterates", "--trials", "10", "--param", "sample_rate=0.3"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "sample_rate" in err and len(err.splitlines()) == 1


def test_audit_config_refuses_a_user_setup_without_allow_code():
    from reports.audit.config import _probe

    spec = {"name": "dpsgd-all-iterates", "trials": 10, "params": {"setup": USER_SETUP}}
    with pytest.raises(ConfigurationError, match="allow-code"):
        _probe("target.probes[0]", spec, allow_code=False)
    assert _probe("target.probes[0]", spec, allow_code=True).params["setup"] == USER_SETUP


def test_dpsgd_probes_take_the_torch_backend_and_refuse_cuda_without_a_device(capsys):
    """--backend torch --device cuda: the DP-SGD probes declare a torch path (opacus trains on the device);
    on a machine without CUDA the command is one line and exit 2, never a silent cpu fallback."""
    import torch

    from attacks.backend import on_backend
    from attacks.probes import get_probe

    probe = on_backend(get_probe("dpsgd-all-iterates", canaries_per_run=10), "torch", "cpu")
    assert probe.device == "cpu" and probe.scores(1, 10, np.random.default_rng(0)).shape == (10,)
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the refusal is for machines without one")
    for name in ("dpsgd-all-iterates", "dpsgd-final-model"):
        code = main(["attack", name, "--trials", "10", "--backend", "torch", "--device", "cuda"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and "CUDA" in err and len(err.splitlines()) == 1
