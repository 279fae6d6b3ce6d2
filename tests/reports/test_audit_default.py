"""The default audit's verdicts on a small copy of it (the same mechanisms and claims; fewer agents, a
short horizon, the cheap synthetic objective): DP-FTS-DE proved (PASS) with its large-delta finding,
classic DP-Fed-PNE refuted by the exact profile (VIOLATION), analytic DP-Fed-PNE proved (PASS); the overall
verdict and exit code do not change with --trials. And the user probe needs --allow-code.

The seeds are fixed, so the verdicts are deterministic; for a random seed a correct target's PASS fails
with probability at most 1 - confidence = 0.05 per target (its probes, Bonferroni); the VIOLATION is the
exact profile's refutation (no randomness)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reports.cli import main
from reports.model import load_report
from tests.user_audit_config import user_mechanism_audit

ROOT = Path(__file__).resolve().parents[2]

PNE = """
[[target]]
name = "DP-Fed-PNE, {calibration} calibration"
algorithm = "dp-fed-pne"
accountants = ["rdp", "pld", "exact"]
[target.parameters]
objective = "garland"
clients = 3
horizon = 100
calibration = "{calibration}"
[target.claim]
epsilon = 10.0
delta = 1e-5
neighbouring = "replace-one"
unit = "one reward of one client (event level)"
[[target.probes]]
name = "pne-reward"
kind = "mechanism"
trials = 20000
"""

SMALL_DEFAULT = (
    """
title = "the default audit, small"
seed = 2026
[[target]]
name = "DP-FTS-DE, synthetic, q = 0.35, z = 1, T = 60, 5 agents"
algorithm = "dp-fts-de"
accountants = ["rdp"]
[target.parameters]
preset = "synthetic"
rate = 0.35
noise_multiplier = 1.0
rounds = 60
num_agents = 5
init_points = 2
num_features = 20
candidates = 20
refine_steps = 1
[target.claim]
epsilon = 15.17
delta = "29^-1.1"
neighbouring = "add-remove"
unit = "one agent (all of its uploads)"
[[target.probes]]
name = "fts-server"
kind = "mechanism"
trials = 20000
"""
    + PNE.format(calibration="classic")
    + PNE.format(calibration="analytic")
)


@pytest.fixture(scope="module")
def audits(tmp_path_factory):
    base = tmp_path_factory.mktemp("default")
    config = base / "default.toml"
    config.write_text(SMALL_DEFAULT)
    out = {}
    for trials in ("20000", "1e5"):
        code = main(["audit", str(config), "--out", str(base / trials), "--quiet", "--trials", trials])
        out[trials] = (code, load_report(base / trials / "report.json"))
    return out


def test_the_verdicts_of_the_default_audit(audits):
    code, report = audits["20000"]
    fts, classic, analytic = report["targets"]
    assert (fts["verdict"]["analytic"]["status"], fts["verdict"]["status"]) == ("PROVED", "PASS")
    # our RDP bound proves it: at least the tight 10.38 (PLD, notes 4.5), at most the claimed 15.17
    assert 10.38 < fts["verdict"]["upper_bound"]["epsilon"] < 15.17
    large = next(f for f in fts["findings"] if f["id"] == "large-delta")
    assert large["values"]["delta_times_units"] == pytest.approx(5 * 29**-1.1)  # 5 agents at delta = 29^-1.1
    assert (classic["verdict"]["analytic"]["status"], classic["verdict"]["status"]) == ("REFUTED", "VIOLATION")
    assert classic["verdict"]["analytic"]["accountant"] == "exact"
    assert (analytic["verdict"]["analytic"]["status"], analytic["verdict"]["status"]) == ("PROVED", "PASS")
    # the analytic target's findings are its own: nothing says its claim is broken
    assert not any(f["severity"] in ("critical", "high") for f in analytic["findings"])
    assert code == report["exit_code"] == 1


def test_the_verdict_does_not_change_with_the_trials(audits):
    (code_a, a), (code_b, b) = audits["20000"], audits["1e5"]
    assert code_a == code_b and a["status"] == b["status"]
    assert [t["verdict"]["status"] for t in a["targets"]] == [t["verdict"]["status"] for t in b["targets"]]
    assert b["targets"][0]["probes"][0]["trials"] == 100000  # --trials 1e5 parsed as attack does
    # the ceilings are the estimator's (Bonferroni Clopper-Pearson), below the single-threshold ceiling
    for report in (a, b):
        planner = report["targets"][0]["planner"]
        assert planner["ceiling"] < planner["perfect_ceiling"]


def test_a_user_probe_runs_only_with_allow_code(tmp_path, capsys):
    config = tmp_path / "user.toml"
    config.write_text(
        user_mechanism_audit(
            "attacks.probes.examples:laplace_count", ROOT / "configs" / "attack_user_example_datasets.toml"
        )
    )
    assert main(["audit", str(config), "--out", str(tmp_path / "no"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--allow-code" in err and err.count("\n") == 0 and not (tmp_path / "no" / "report.json").exists()
    assert main(["audit", str(config), "--out", str(tmp_path / "yes"), "--quiet", "--allow-code"]) in (0, 3)
    probe = load_report(tmp_path / "yes" / "report.json")["targets"][0]["probes"][0]
    assert (
        probe["outcome"] == "ran"
        and "--allow-code" in load_report(tmp_path / "yes" / "report.json")["provenance"]["command"]
    )
