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

import numpy as np
import pytest

from dpfed.fkm import algorithm
from dpfed.fkm.private import EventLevelFeedback
from tests.attacks.bundled_audit import audit_private_target


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
    result = audit_private_target("audit_fkm.toml", "dp-fkm")
    assert result.verdict.status.value == "PASS", result.verdict
    assert result.verdict.empirical.lower_bound.epsilon <= result.claim.epsilon


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_planted_bug_is_a_violation_of_the_bundled_audit(bug, monkeypatch):
    BUGS[bug](monkeypatch)
    result = audit_private_target("audit_fkm.toml", "dp-fkm")
    assert result.verdict.status.value == "VIOLATION", result.verdict
    assert result.verdict.rule == "implementation-bug"
    assert result.verdict.empirical.lower_bound.epsilon > result.claim.epsilon
