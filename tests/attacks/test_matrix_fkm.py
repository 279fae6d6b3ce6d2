"""Planted-bug matrix for DP-FKM (issue 21): bugs planted FROM THIS TEST into the algorithm's own code
(``dpfed.fkm``, monkeypatched), each a VIOLATION of the bundled audit's DP-FKM target
(``configs/audit_fkm.toml``, its probes and budgets as shipped), the correct code a PASS.

Kinds (event level: the learner observes each round's loss clipped to [-B, B] plus one Gaussian):
* half noise: the feedback's release (``EventLevelFeedback.observe``) adds half the configured noise;
* clipping skipped: the release noises the raw loss; the probes' canary losses are +-10 B, beyond the clip;
* a decision from the un-noised value: the transcript shows the noisy release, but the learner's gradient
  step (``one_point_gradient``) uses the clipped exact loss, which the later plays reveal.

Error rates: the audit's confidence is 0.95 (Bonferroni over the target's probes), so a correct
implementation is refuted with probability <= 5% for a random seed; the audit's seed is the bundled one
(fixed), so each outcome is deterministic.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from dpfed.fkm import algorithm
from dpfed.fkm.private import EventLevelFeedback
from reports.audit import AuditOptions
from reports.audit.config import load_config
from reports.audit.runner import run_audit

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "audit_fkm.toml"


def _audit_private_target():
    config = load_config(CONFIG)
    (spec,) = [t for t in config["targets"] if t.algorithm == "dp-fkm"]
    # utility is not judged here; the exact accountant alone proves the claim
    spec = dataclasses.replace(spec, utility_runs=1, accountants=("exact",))
    options = AuditOptions(seed=config["seed"], executor="inprocess", progress=False, estimate=False)
    (result,) = run_audit([spec], options, log=lambda _: None)
    return result


def _half_noise(monkeypatch):
    def observe(self, t, points, rng):
        value = self.losses.value(t, points)
        half = dataclasses.replace(self.mechanism, noise_multiplier=self.mechanism.noise_multiplier / 2)
        return value, half.release(np.clip(value, -self.losses.bound, self.losses.bound), rng)

    monkeypatch.setattr(EventLevelFeedback, "observe", observe)


def _clipping_skipped(monkeypatch):
    def observe(self, t, points, rng):
        value = self.losses.value(t, points)
        return value, self.mechanism.release(value, rng)

    monkeypatch.setattr(EventLevelFeedback, "observe", observe)


def _unnoised_step(monkeypatch):
    exact = {}
    original_observe, original_gradient = EventLevelFeedback.observe, algorithm.one_point_gradient

    def observe(self, t, points, rng):
        value, released = original_observe(self, t, points, rng)
        exact["loss"] = np.clip(value, -self.losses.bound, self.losses.bound)
        return value, released

    def gradient(observed, directions, exploration):
        return original_gradient(exact.pop("loss", observed), directions, exploration)

    monkeypatch.setattr(EventLevelFeedback, "observe", observe)
    monkeypatch.setattr(algorithm, "one_point_gradient", gradient)


BUGS = {"half-noise": _half_noise, "clipping-skipped": _clipping_skipped, "unnoised-step": _unnoised_step}


def test_correct_dp_fkm_passes_its_bundled_audit():
    result = _audit_private_target()
    assert result.verdict.status.value == "PASS", result.verdict
    assert result.verdict.empirical.lower_bound.epsilon <= result.claim.epsilon


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_planted_bug_is_a_violation_of_the_bundled_audit(bug, monkeypatch):
    BUGS[bug](monkeypatch)
    result = _audit_private_target()
    assert result.verdict.status.value == "VIOLATION", result.verdict
    assert result.verdict.rule == "implementation-bug"
    assert result.verdict.empirical.lower_bound.epsilon > result.claim.epsilon
