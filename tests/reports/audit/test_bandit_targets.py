"""The DUETS, FedZero and FKM targets (private variants ours): each example configuration audits end to end on
a reduced budget with the expected verdicts; non-private variants are refuted (epsilon infinite) and their
probes reach the estimator's ceiling; probes that cannot attack a setting decline with a reason.

Seeds are fixed, so each test is deterministic. Were the seeds free, a private target could fail only if a
rigorous lower bound exceeded its true epsilon, which has probability at most 1 - 0.95 per target (the
audit's confidence); at these budgets the bounds sit far below the true epsilons (about half of them).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from accounting.errors import ConfigurationError
from accounting.exact import gaussian_epsilon
from reports.audit.accounting import accounting_section
from reports.audit.model import Analytic, Claim, ProbeSpec, TargetSpec
from reports.audit.probes import build_probe
from reports.audit.targets import ProbeDeclined, build_target, spent_over_rounds
from reports.audit.verdicts import analytic_verdict

ROOT = Path(__file__).resolve().parents[3]
TRIALS = 3000


def _reduced(path: Path, tmp_path: Path) -> Path:
    """The example configuration with every probe at TRIALS trials and the fast accountants only (the exact
    accountant still proves each private claim: none of these examples subsamples)."""
    text = re.sub(r"(?m)^trials = \d+$", f"trials = {TRIALS}", path.read_text())
    text = text.replace('accountants = ["rdp", "pld", "exact"]', 'accountants = ["rdp", "exact"]')
    out = tmp_path / path.name
    out.write_text(text)
    return out


@pytest.mark.parametrize("system", ["duets", "fedzero", "fkm"])
def test_each_example_config_audits_end_to_end_with_the_expected_verdicts(system, tmp_path):
    from reports.cli import main

    config = _reduced(ROOT / "configs" / f"audit_{system}.toml", tmp_path)
    out = tmp_path / "out"
    assert main(["audit", str(config), "--out", str(out), "--quiet", "--trials", str(TRIALS)]) == 1  # VIOLATION
    report = json.loads((out / "report.json").read_text())
    private = [t for t in report["targets"] if t["algorithm"] == f"dp-{system}"]
    (plain,) = [t for t in report["targets"] if t["algorithm"] == system]
    # audit_fkm.toml adds a DP-FKM target with z given; audit_duets.toml reward level and a binding clip
    assert len(private) + 1 == len(report["targets"]) and len(private) == {"fkm": 2, "duets": 3}.get(system, 1)
    for target in private:
        assert target["verdict"]["status"] == "PASS" and target["verdict"]["analytic"]["status"] == "PROVED"
        upper = float(target["verdict"]["analytic"]["epsilon"])
        for probe in (p for p in target["probes"] if p["outcome"] == "ran"):
            assert max(float(b["epsilon"]) for b in probe["bounds"] if b["rigorous"]) <= upper
    assert plain["verdict"]["status"] == "VIOLATION" and plain["verdict"]["analytic"]["status"] == "REFUTED"
    assert plain["verdict"]["analytic"]["epsilon"] == "inf"
    ran = [p for p in plain["probes"] if p["outcome"] == "ran"]
    assert ran and all(p["kind"] == "end-to-end" for p in ran)
    for probe in ran:  # without noise the probe separates the worlds perfectly: the bound is the ceiling
        best = max(float(b["epsilon"]) for b in probe["bounds"] if b["rigorous"])
        assert best == pytest.approx(float(probe["ceiling"]), rel=1e-9), probe["name"]
    declined = [p for p in report["targets"][1]["probes"] if p["outcome"] == "declined"]
    assert all(p["reason"] for p in declined)
    remarks = [f for t in report["targets"] for f in t["findings"] if f["id"] == "privacy-remark"]
    assert len(remarks) == (system == "fedzero")
    if system == "fedzero":
        _check_privacy_remark(remarks[0], plain, out)


def _check_privacy_remark(remark: dict, plain: dict, out: Path) -> None:
    """FedZero's closing remark is answered from its non-private probe's numbers, worded by the renderers."""
    probe = next(p for p in plain["probes"] if p["name"] == remark["values"]["probe"])
    assert remark["values"]["lower_bound"] == max(b["epsilon"] for b in probe["bounds"] if b["rigorous"])
    assert remark["values"]["reaches_ceiling"] is True and remark["severity"] == "high"
    for name in ("report.md", "report.html"):
        assert "closing remark" in (out / name).read_text()


def _target(system: str, epsilon: float = 2.0, **parameters):
    return build_target(TargetSpec("t", system, Claim(epsilon, 1e-5, "add-remove", "x"), parameters=parameters))


def test_a_non_private_target_is_refuted_with_infinite_epsilon_by_every_accountant():
    target = _target("fkm", horizon=50)
    assert target.mechanism is None and target.composition() is None
    section = accounting_section(target, ["rdp", "pld", "exact"])
    assert [r.epsilon for r in section.rows] == [math.inf] * 3 and section.over_rounds == ()
    verdict = analytic_verdict(target.claim, section)
    assert verdict.status is Analytic.REFUTED and math.isinf(verdict.epsilon)
    assert list(spent_over_rounds(None, [0, 1, 2], 1e-5)) == [0.0, math.inf, math.inf]
    assert all(y == 1.0 for y in target.tradeoff().y)


def test_the_private_targets_account_exactly_the_releases_their_runs_make():
    fkm = _target("dp-fkm", epsilon=1.5, horizon=50)  # event level: one Gaussian calibrated to the claim
    assert fkm.releases == 1 and gaussian_epsilon(1 / fkm.mechanism.noise_multiplier, 1e-5) == pytest.approx(1.5)
    fedzero = _target("dp-fedzero", rounds=30, noise_multiplier=3.0, rate=0.5)
    assert fedzero.releases == 30 and (fedzero.mechanism.rate, fedzero.mechanism.noise_multiplier) == (0.5, 3.0)
    duets = _target("dp-duets", horizon=20, noise_multiplier=2.0)
    epochs = [m for m, k in duets.composition().parts for _ in range(k)]
    assert len(epochs) == duets.releases == 3 and {m.noise_multiplier for m in epochs} == {2.0}


def test_probes_that_cannot_attack_a_setting_decline_with_a_reason():
    eliminating = _target("dp-duets", horizon=20)  # agent level with the paper's elimination rule
    with pytest.raises(ProbeDeclined, match="elimination"):
        build_probe(eliminating, ProbeSpec("dp-duets-end-to-end", "end-to-end", 10))
    dataset = _target("dp-fkm", horizon=20, unit="dataset", records=10)
    for name in ("fkm-loss", "fkm-end-to-end"):
        with pytest.raises(ProbeDeclined, match="dataset level"):
            build_probe(dataset, ProbeSpec(name, "end-to-end", 10))
    vector = _target("dp-fedzero", rounds=10, noise="vector")
    with pytest.raises(ProbeDeclined, match="vector"):
        build_probe(vector, ProbeSpec("fedzero-end-to-end", "end-to-end", 10))
    with pytest.raises(ProbeDeclined, match="private = False"):
        build_probe(_target("dp-fedzero", rounds=10), ProbeSpec("fedzero-nonprivate", "end-to-end", 10))
    with pytest.raises(ProbeDeclined, match="estimator"):  # a setting the replay cannot carry
        build_probe(_target("fedzero", rounds=10, estimator="one-point"), ProbeSpec("fedzero-nonprivate", "e", 10))


def test_privacy_parameters_of_a_non_private_target_are_errors():
    with pytest.raises(ConfigurationError, match="noise_multiplier"):
        _target("fedzero", noise_multiplier=2.0)
    with pytest.raises(ConfigurationError, match="unit"):
        _target("fkm", unit="event")
    with pytest.raises(ConfigurationError, match="algorithm"):
        _target("duets", **{"algorithm": "dp-duets"})


def test_the_broadcast_probes_decline_a_geometry_they_cannot_invert():
    for system, name in (("dp-fedzero", "fedzero-broadcast"), ("fedzero", "fedzero-broadcast-leak")):
        with pytest.raises(ProbeDeclined, match="workers <= dim"):
            build_probe(_target(system, rounds=10, dim=3, workers=4), ProbeSpec(name, "end-to-end", 10))
