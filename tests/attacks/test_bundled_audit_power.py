"""Every bundled audit of a private system states a power that detects half the noise (issue 21 item 3).

Each configuration is loaded and planned as ``dpaudit audit --config`` plans it (same seed and target
index, so the same probes, budgets and per-probe confidence); each probe's stated power is
``attacks.power.probe_power`` at that confidence, the figure the report prints (``reports/audit/probes.py``).
A private target detects f = 0.5 when its most powerful probe refutes an implementation adding half the
configured noise (or less) with probability 0.9: that is the sentence of ``reports.power_words``. The power
figures are exact lower bounds of the estimator's refutation probability, checked against simulation in
``tests/attacks/test_power.py``; nothing here is random.

DP-FTS-DE (``audit_dpftsde.toml``, also the default audit's first target) is the known shortfall: against
the paper's claim 15.17 at delta 29^-1.1 its server probes need about 3.6e7 trials per world (the
estimator's ceiling alone needs more than 1e7), about 10 CPU minutes, twice the default audit's whole
budget. Its second target, the planted-bug matrix (10 rounds against the tight 0.93), is where the bundled
DP-FTS-DE audit detects half the noise: through its end-to-end replay probe.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attacks.power import probe_power
from reports.audit import AuditOptions
from reports.audit.config import load_config
from reports.audit.runner import plan_target
from reports.power_words import audit_power_text

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
PRIVATE_AUDITS = [
    "audit_dpfedpne.toml",
    "audit_duets.toml",
    "audit_fedzero.toml",
    "audit_fkm.toml",
    "audit_fkm_bound.toml",
]
FTS_END_TO_END = "fts-end-to-end"  # budget owned by another branch (issue 21 item 1 for DP-FTS-DE)


def stated_power(config_name: str, skip=()) -> dict:
    """{target name: [probe dict as a report's probe section holds it]} for the targets with stated power."""
    config = load_config(CONFIGS / config_name)
    options = AuditOptions(seed=config["seed"], confidence=config["confidence"], progress=False, estimate=False)
    targets = {}
    for index, spec in enumerate(config["targets"]):
        planned = plan_target(spec, index, options)
        confidence = 1.0 - (1.0 - config["confidence"]) / planned.confidence_per_probe_divisor
        probes = []
        for p in planned.probes:
            if p.probe is None or p.spec.name in skip:
                continue
            power = probe_power(p.probe, p.trials, spec.claim.epsilon, spec.claim.delta, confidence)
            if power is not None:
                probes.append({"name": p.spec.name, "outcome": "ran", "trials": p.trials, "power": power.to_dict()})
        if probes:
            targets[spec.name] = probes
    return targets


@pytest.mark.parametrize("config_name", PRIVATE_AUDITS)
def test_every_private_target_of_the_bundled_audit_detects_half_the_noise(config_name):
    targets = stated_power(config_name)
    assert targets, f"{config_name} states no power for any target"
    for name, probes in targets.items():
        best = max(p["power"]["refuted_fraction"] for p in probes)
        assert best >= 0.5, f"{config_name}: {name}: refutes only f <= {best} (probes {probes})"
        words = audit_power_text(probes)
        assert "would refute an implementation adding" in words and "it detects half the noise" in words


def test_the_fts_server_probes_state_their_power_in_words():
    targets = stated_power("audit_dpftsde.toml", skip=(FTS_END_TO_END,))
    (probes,) = targets.values()
    assert {p["name"] for p in probes} == {"fts-server", "fts-server-reference"}
    for p in probes:
        assert p["power"]["half_noise_trials"] is not None  # the budget that would detect half the noise
    assert audit_power_text(probes).startswith("Power: ")


@pytest.mark.xfail(strict=True, reason="DP-FTS-DE's claim 15.17 needs ~3.6e7 trials per world (module docstring)")
def test_the_fts_server_probes_detect_half_the_noise():
    (probes,) = stated_power("audit_dpftsde.toml", skip=(FTS_END_TO_END,)).values()
    assert max(p["power"]["refuted_fraction"] for p in probes) >= 0.5


def test_the_fts_planted_bug_target_detects_half_the_noise_end_to_end():
    targets = stated_power("audit_dpftsde.toml")
    (matrix,) = [probes for name, probes in targets.items() if "planted-bug matrix" in name]
    assert {p["name"] for p in matrix} == {FTS_END_TO_END}
    assert max(p["power"]["refuted_fraction"] for p in matrix) >= 0.5
    assert "it detects half the noise" in audit_power_text(matrix)
