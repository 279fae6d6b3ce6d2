"""Planted-bug matrix, DP-FTS-DE row (issue 21 item 4), audited with the bundled ``configs/audit_dpftsde.toml``.

Each bug is planted from here into the server's own function (``Server.aggregate`` in
``dpfed/fts/server.py``, patched with ``monkeypatch``; the shipped code has no option for them). The
server keeps its configuration; only the mechanism its release call runs is changed, so the
configuration, ``block_noise_std`` and the accountants still describe the correct mechanism:

* half noise: the release runs with ``noise_multiplier / 2``;
* clipping skipped: the release runs with a clip 1e6 times larger and a noise multiplier 1e6 times
  smaller (the same noise standard deviation, a clip that never binds); the probe's canary sits at 10x
  the clip bound;
* a broadcast made from the un-noised value: the release runs with a noise multiplier of 1e-300 (the
  sampled, clipped, weighted sum is broadcast as it is). In DP-FTS-DE a "decision" made from the
  un-noised value is this same kind: the server's only output is its broadcast, and the agents'
  decisions are functions of the broadcast and of their own data.

The audited target is the bundled configuration's planted-bug matrix target (synthetic objective, T = 10,
against the schedule's tight epsilon 0.93), whose end-to-end probe scores by replay. Every audit uses the
configuration's seed, so each test is deterministic. False-failure probabilities for a random seed: the
correct code fails PASS with probability at most 0.05 (the audit's confidence); the half-noise bug at the
bundled 600 trials per world gave bounds 1.08 to 1.34 in 5 of 5 seeds of the matched server-mechanism
probe at 500 trials (claim 0.93); the clip and broadcast bugs leave world 0's and world 1's scores far
apart and are refuted with a wide margin at the 200 trials per world used here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from dpfed.fts.server import Server
from reports.audit.config import load_config
from reports.audit.runner import AuditOptions, run_audit

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "audit_dpftsde.toml"
MATRIX = "(planted-bug matrix)"
_CORRECT = Server.aggregate


def _releasing_with(change):
    """``Server.aggregate`` whose release runs ``change(mechanism)`` in place of the configured mechanism."""

    def aggregate(self, uploads, present, round_index, rng):
        configured = self.mechanism
        self.mechanism = change(configured)
        try:
            return _CORRECT(self, uploads, present, round_index, rng)
        finally:
            self.mechanism = configured

    return aggregate


BUGS = {
    "half-noise": _releasing_with(lambda m: dataclasses.replace(m, noise_multiplier=m.noise_multiplier / 2)),
    "no-clip": _releasing_with(
        lambda m: dataclasses.replace(m, clip=m.clip * 1e6, noise_multiplier=m.noise_multiplier / 1e6)
    ),
    "unnoised-broadcast": _releasing_with(lambda m: dataclasses.replace(m, noise_multiplier=1e-300)),
}


def _matrix_audit(trials: int | None = None):
    """The bundled matrix target's result (its own budget, or ``trials`` per world)."""
    config = load_config(CONFIG)
    spec = next(t for t in config["targets"] if MATRIX in t.name)
    spec = dataclasses.replace(spec, accountants=("rdp",))
    if trials is not None:
        spec = dataclasses.replace(spec, probes=tuple(dataclasses.replace(p, trials=trials) for p in spec.probes))
    options = AuditOptions(
        seed=config["seed"], confidence=config["confidence"], executor="inprocess", progress=False, estimate=False
    )
    (result,) = run_audit([spec], options, log=lambda _: None)
    return result


@pytest.mark.slow  # an audit of 600 trials per world of the real algorithm: about 10 s of CPU
def test_correct_code_passes_the_bundled_matrix_target():
    result = _matrix_audit()
    assert result.verdict.status.value == "PASS"
    (probe,) = result.probes
    assert probe.name == "fts-end-to-end" and probe.params["score"] == "replay"
    assert "whether each other agent was sampled" in probe.threat_model
    assert "not the canary's own sampling" in probe.threat_model


@pytest.mark.slow  # an audit of 600 trials per world of the real algorithm: about 10 s of CPU
def test_half_the_servers_noise_is_a_violation_at_the_bundled_budget(monkeypatch):
    monkeypatch.setattr(Server, "aggregate", BUGS["half-noise"])
    assert _matrix_audit().verdict.status.value == "VIOLATION"


@pytest.mark.parametrize("bug", ["no-clip", "unnoised-broadcast"])
def test_big_planted_bug_is_a_violation(monkeypatch, bug):
    monkeypatch.setattr(Server, "aggregate", BUGS[bug])
    result = _matrix_audit(trials=200)
    assert result.verdict.status.value == "VIOLATION"
    assert result.verdict.empirical.lower_bound.epsilon > 0.93
