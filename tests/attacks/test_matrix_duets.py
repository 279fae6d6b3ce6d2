"""Planted-bug matrix for DP-DUETS (issue 21): bugs planted FROM THIS TEST into the algorithm's own code
(``dpfed.duets.algorithm``, monkeypatched), each a VIOLATION of the bundled audit's DP-DUETS target
(``configs/audit_duets.toml``, its probes and budgets as shipped), the correct code a PASS.

Kinds:
* half noise: the server's release (``server_release``) runs the epoch mechanism with half its noise
  multiplier;
* clipping skipped: the agents use their raw rewards (``clip_rewards``) and the server sums the statistics
  without clipping them to C_j (``release_sum`` replaced by sum + noise); the probe's canary rewards are
  10 c_y, beyond the clip;
* broadcast from the un-noised value: the server draws its noisy release but broadcasts ``v_bar`` solved
  from the exact sum.
A fourth kind, an elimination decided from the un-noised sum, cannot apply to this target: it runs with
``elimination = "off"`` (agent-level replay needs a noise-independent trajectory), see BENCHMARKS.md.

Error rates: the audit's confidence is 0.95 (Bonferroni over the target's probes), so a correct
implementation is refuted with probability <= 5% for a random seed; the audit's seed is the bundled one
(fixed), so each outcome is deterministic.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpfed.duets import algorithm
from tests.attacks.bundled_audit import audit_private_target


def _half_noise(monkeypatch):
    original = algorithm.server_release

    def release(config, mechanism, statistics, rng, trials):
        half = dataclasses.replace(mechanism, noise_multiplier=mechanism.noise_multiplier / 2)
        return original(config, half, statistics, rng, trials)

    monkeypatch.setattr(algorithm, "server_release", release)


def _clipping_skipped(monkeypatch):
    def release_sum(config, mechanism, statistics, rng):
        return mechanism.add_noise(np.asarray(statistics).sum(axis=-2), rng) / mechanism.rate

    monkeypatch.setattr(algorithm, "clip_rewards", lambda config, rewards: rewards)
    monkeypatch.setattr(algorithm, "release_sum", release_sum)


def _unnoised_broadcast(monkeypatch):
    original = algorithm.server_release

    def release(config, mechanism, statistics, rng, trials):
        noisy = original(config, mechanism, statistics, rng, trials)  # drawn, then not used
        return np.broadcast_to(statistics.sum(axis=0), noisy.shape)

    monkeypatch.setattr(algorithm, "server_release", release)


BUGS = {"half-noise": _half_noise, "clipping-skipped": _clipping_skipped, "unnoised-broadcast": _unnoised_broadcast}


def test_correct_dp_duets_passes_its_bundled_audit():
    result = audit_private_target("audit_duets.toml", "dp-duets")
    assert result.verdict.status.value == "PASS", result.verdict
    assert result.verdict.empirical.lower_bound.epsilon <= result.claim.epsilon


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_planted_bug_is_a_violation_of_the_bundled_audit(bug, monkeypatch):
    BUGS[bug](monkeypatch)
    result = audit_private_target("audit_duets.toml", "dp-duets")
    assert result.verdict.status.value == "VIOLATION", result.verdict
    assert result.verdict.rule == "implementation-bug"
    assert result.verdict.empirical.lower_bound.epsilon > result.claim.epsilon
