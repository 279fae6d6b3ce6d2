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

import numpy as np
import pytest
from scipy import stats

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


# ---- null worlds: the canary at the clip bound against 10x beyond it, through the correct server ----

REPETITIONS = 200
NULL_TRIALS = 20  # the fewest at which a perfectly separating score certifies a positive bound (0.80)


def _null_probe():
    from attacks.probes.fts_end_to_end import FtsEndToEndProbe

    @dataclasses.dataclass
    class NullCanary(FtsEndToEndProbe):
        """World 0: the canary at the clip bound; world 1: at ``canary_norm`` times it. A clipping server
        releases the same law in both, so a positive bound is a false alarm."""

        def scores(self, world, trials, rng):
            norm = self.canary_norm  # the observer (built once, from the 10x canary) is the same in both
            if world == 0:
                self.canary_norm = 1.0
            try:
                return super().scores(1, trials, rng)
            finally:
                self.canary_norm = norm

    return NullCanary(rounds=3, canary_norm=10.0)


def test_replay_is_valid_on_null_worlds_with_the_canary_beyond_the_clip_bound():
    # 200 audits of a null world, each Clopper-Pearson on 20 trials per world of the real algorithm
    # (3 rounds; one batched run of 200 x 20 trials per world split into 200 disjoint audits), at the
    # probe's delta. The check fails only if the count of positive bounds is improbably high under the
    # nominal 5% (binomial p < 0.001): a valid probe fails it with probability at most 0.001.
    from attacks.estimators.clopper_pearson import clopper_pearson_lower_bound

    probe = _null_probe()
    rng = np.random.default_rng(2116)
    out, inn = (probe.scores(w, REPETITIONS * NULL_TRIALS, rng).reshape(REPETITIONS, NULL_TRIALS) for w in (0, 1))
    delta = probe.default_delta
    wrong = sum(clopper_pearson_lower_bound(o, i, delta).epsilon > 0 for o, i in zip(out, inn, strict=True))
    assert stats.binomtest(wrong, REPETITIONS, 0.05, alternative="greater").pvalue > 1e-3, wrong


def test_the_null_world_check_has_power_against_a_server_that_skips_clipping(monkeypatch):
    # the same null world with the clip skipped is no longer null: most audits give a positive bound
    from attacks.estimators.clopper_pearson import clopper_pearson_lower_bound

    monkeypatch.setattr(Server, "aggregate", BUGS["no-clip"])
    probe, reps, trials = _null_probe(), 20, NULL_TRIALS
    rng = np.random.default_rng(2117)
    out, inn = (probe.scores(w, reps * trials, rng).reshape(reps, trials) for w in (0, 1))
    bounds = [clopper_pearson_lower_bound(o, i, probe.default_delta).epsilon for o, i in zip(out, inn, strict=True)]
    positive = sum(b > 0 for b in bounds)
    assert positive >= reps // 2
