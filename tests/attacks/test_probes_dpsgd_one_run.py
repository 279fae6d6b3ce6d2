"""The one-run gradient canaries as a probe (``dpsgd-one-run``): one opacus training with fair-coin canaries,
Steinke et al.'s bound and the one-run decision, on a ``DpsgdSetup`` and on opacus-check's dict (a per-canary
inclusion mask through the user's own optimizer). Tiny trainings: one full-batch step of the bundled breast-cancer
example, the tiny opacus set-up of tests/opacus_setup (20 steps, 12 coordinates). Seeds fixed: deterministic.
The estimator's null validity is tested in tests/attacks/test_estimators_ties.py."""

from __future__ import annotations

import numpy as np
import pytest

from accounting.errors import ConfigurationError
from attacks.probes import PROBES, get_probe

pytest.importorskip("opacus")
ONE_STEP = {"sample_rate": 1.0, "epochs": 1}  # one full-batch step: a Gaussian mechanism, mu = 1 / z
TINY = "tests/opacus_setup/tiny_setups.py:correct"  # opacus-check's dict: 12 coordinates, 200 records


def test_registered_one_run_probe_and_its_views():
    probe = get_probe("dpsgd-one-run", **ONE_STEP)
    assert "dpsgd-one-run" in PROBES and probe.one_run and probe.threat_model.startswith("all iterates")
    assert get_probe("dpsgd-one-run", view="last-iterate", **ONE_STEP).threat_model.startswith("last iterate")
    with pytest.raises(ConfigurationError, match="view"):
        get_probe("dpsgd-one-run", view="final-model")
    with pytest.raises(ConfigurationError, match="one-run probe"):
        probe.scores(1, 10, np.random.default_rng(0))


def test_correct_setup_is_no_violation_and_small_noise_against_a_small_claim_is():
    # 500 canaries, one step at z = 1.316 (true epsilon 3.19 at 1e-5), claimed at its own epsilon: a VIOLATION
    # has probability <= 0.05 (the estimator's confidence; the seed is fixed). Measured: Steinke bound 0.59.
    correct = get_probe("dpsgd-one-run", noise_multiplier=1.316, **ONE_STEP)
    claim = correct.true_epsilon(1e-5)
    outcome = correct.run_once(500, 7, claim, 1e-5, 0.95)
    assert outcome.status != "VIOLATION" and outcome.ceiling > claim
    both = {b["method"]: b for b in outcome.bounds if b["rigorous"]}  # counted and weighted guesses
    rigorous = both["one-run"]
    assert set(both) == {"one-run", "one-run-weighted"}
    assert {"canaries", "guesses", "correct"} <= set(rigorous["details"])
    assert all(b["threat_model"] == "all_iterates" and b["epsilon"] < claim for b in both.values())
    assert [f["code"] for f in outcome.findings] == ["opacus-reported"]
    assert outcome.findings[0]["values"]["steps"] == 1
    # The planted half noise (opacus's noise halved behind its accountant) on the same seed and coins: the canaries
    # separate further (measured 2.08, below the claim: one run does not refute half the noise, the multi-run
    # probes do). z = 0.3 (mu 3.3) against a claim of 2: every guess right, a VIOLATION (measured bound 3.95).
    half = get_probe("dpsgd-one-run", noise_multiplier=1.316, planted_bug="half-noise", **ONE_STEP)
    assert half.run_once(500, 7, claim, 1e-5, 0.95).bounds[0]["epsilon"] > rigorous["epsilon"] + 1.0
    weak = get_probe("dpsgd-one-run", noise_multiplier=0.3, **ONE_STEP).run_once(500, 7, 2.0, 1e-5, 0.95)
    assert weak.status == "VIOLATION" and weak.p_value <= 0.05 and weak.bounds[0]["epsilon"] > 2.0


def test_opacus_dict_takes_a_per_canary_mask():
    """Through the user's own optimizer with its noise scaled to 0: an excluded canary's coordinate never moves,
    an included one moves by exactly 1/z in the steps that sampled it; a bool still means every canary or none."""
    from attacks.probes.dpsgd_user import load_user_setup, optimizer_gradient_canaries
    from dpfed.dpsgd.planted import scaled_noise

    run = load_user_setup(TINY)
    mask = np.arange(12) % 2 == 0
    with scaled_noise(0.0):
        updates = optimizer_gradient_canaries(run, 12, mask, 5)
        everyone = optimizer_gradient_canaries(run, 12, True, 5)
    assert updates.shape == (run.steps, 12)
    assert np.all(updates[:, ~mask] == 0.0)
    assert np.allclose(updates[:, mask] * run.noise_multiplier, np.round(updates[:, mask] * run.noise_multiplier))
    assert updates[:, mask].sum() > 0 and np.array_equal(everyone[:, mask], updates[:, mask])
    with pytest.raises(ConfigurationError, match="one inclusion flag per canary"):
        optimizer_gradient_canaries(run, 12, mask[:5], 5)


def test_one_run_on_the_opacus_dict_and_a_count_the_setup_cannot_hold():
    probe = get_probe("dpsgd-one-run", setup=TINY)
    outcome = probe.run_once(12, 3, 3.0, 1e-5, 0.95)
    assert outcome.status in ("PASS", "INCONCLUSIVE") and outcome.details["canaries"] == 12
    assert outcome.findings[0]["values"]["steps"] == 20
    with pytest.raises(ConfigurationError, match=r"trials: 13 canaries .*at most 12") as error:
        probe.check_canaries(13)
    assert len(str(error.value).splitlines()) == 1
