"""No PASS without a test (issue 40): a target that runs the user's implementation runs its default probes when the
configuration lists none, and with an explicit ``probes = []`` (and nothing of its own measuring the run) its
verdict is INCONCLUSIVE with the rule ``untested-implementation``, a HIGH finding and a Power line saying why.
Deterministic (planning and accounting only; no probe runs here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.audit.config import parse_config
from reports.audit.runner import AuditOptions, plan_target, probe_specs, run_audit

pytest.importorskip("opacus")
HERE = Path(__file__).resolve().parents[2]
CONFIG = """
seed = 1
[[target]]
name = "user DP-SGD"
algorithm = "dp-sgd"
accountants = ["rdp", "pld"]
{probes}
[target.parameters]
setup = "{setup}"
[target.claim]
epsilon = 10.0
delta = 1e-5
neighbouring = "add-remove"
unit = "record"
"""


def _targets(setup: str, probes: str):
    text = CONFIG.format(setup=setup, probes=probes)
    return parse_config(text, "test.toml", allow_code=True, base_dir=HERE)["targets"]


def test_no_probe_listed_means_the_default_all_iterates_probe():
    [spec] = _targets("dpfed/user_dpsgd_setup.py:digits_mlp_setup", "")
    assert not spec.probes_given
    planned = plan_target(spec, 0, AuditOptions(estimate=False, progress=False))
    assert [p.name for p in probe_specs(planned.target)] == ["dpsgd-all-iterates"]
    [probe] = planned.probes
    assert probe.spec.trials is None and probe.trials > 0  # planned by the target (power against half the noise)


def test_an_explicit_empty_list_is_not_a_plain_pass(tmp_path):
    from reports.cli import main

    [spec] = _targets("dpfed/user_dpsgd_setup.py:digits_mlp_setup", "probes = []")
    assert spec.probes_given and not spec.probes
    [result] = run_audit([spec], AuditOptions(estimate=False, progress=False), log=lambda m: None)
    assert result.verdict.status.value == "INCONCLUSIVE" and result.verdict.rule == "untested-implementation"
    assert result.verdict.analytic.status.value == "PROVED"  # the description holds; the code was not tested
    assert any(f.id == "implementation-untested" and f.severity == "high" for f in result.findings)
    config = tmp_path / "audit.toml"
    config.write_text(CONFIG.format(setup=str(HERE / "dpfed/user_dpsgd_setup.py:digits_mlp_setup"),
                                    probes="probes = []"))
    assert main(["audit", str(config), "--allow-code", "--out", str(tmp_path / "out")]) == 3
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["targets"][0]["verdict"]["rule"] == "untested-implementation"
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "the implementation was not tested" in markdown and "Power: none" in markdown


def test_a_target_measuring_its_own_run_is_tested_without_probes():
    """opacus-check's dict form measures the noise through the user's optimizer: probes = [] keeps its PASS."""
    [spec] = _targets("dpsgd_outside/setup_digits.py:make_setup", "probes = []")
    [result] = run_audit([spec], AuditOptions(estimate=False, progress=False), log=lambda m: None)
    assert result.verdict.rule != "untested-implementation"


@pytest.mark.slow
@pytest.mark.parametrize("config, status", [("audit_digits_defaults.toml", "PASS"),
                                            ("audit_digits_half_noise_defaults.toml", "VIOLATION")])
def test_default_probes_refute_half_the_noise(tmp_path, config, status):
    """The outside opacus set-up with no probe listed: the default dpsgd-all-iterates probe, its trials planned to
    refute half the noise with probability 0.9 (10,776 per world here), passes the correct training and refutes the
    halved noise (rigorous Clopper-Pearson bound above the claim; the seed is fixed, so the outcome is too)."""
    from reports.cli import main

    exit_code = main(["audit", str(HERE / "dpsgd_outside" / config), "--allow-code", "--out", str(tmp_path / "out")])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    [target] = report["targets"]
    assert [p["name"] for p in target["probes"]] == ["dpsgd-all-iterates"] and target["probes"][0]["outcome"] == "ran"
    assert target["verdict"]["status"] == status and exit_code == (0 if status == "PASS" else 1)
    if status == "VIOLATION":
        assert target["verdict"]["empirical"]["status"] == "VIOLATION"
