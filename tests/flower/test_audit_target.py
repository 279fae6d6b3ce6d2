"""The Flower audit target (``dpaudit audit configs/audit_flower.toml``) on Flower's simulation engine.

Must-show 3 through the audit: each planted app (noise cut by a constant factor, noise skipped on one
round, unequal weights) is a VIOLATION with a critical finding; the correct app is not. Four Flower runs
(the configuration as shipped and the noise-cut app through the CLI, the other two through the runner;
2 rounds each; 20-60 s each on 2 cores). The transcript
check tests at alpha = 1e-3 per check kind, so the correct app fails falsely with probability below ~4e-3,
and its canary bound exceeds the claim 8 (true epsilon about 7) with probability below 5%, far less in
practice (the bounds of a 40-canary run stay below 2); seeds are fixed.
"""

from pathlib import Path

import pytest

pytest.importorskip("flwr", reason="flwr is not installed (pip install -e '.[flower]')")

from reports.audit.config import load_config  # noqa: E402
from reports.audit.runner import AuditOptions, audit_target, plan_target  # noqa: E402
from reports.audit.target_flower import FlowerTarget, settings_from  # noqa: E402
from reports.cli import main  # noqa: E402
from reports.model import load_report  # noqa: E402

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "audit_flower.toml"
# Flower simulations (20-30 s each on 2 cores): slow, so tests/conftest.py starts this module early
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("flower-audit")
    code = main(["audit", str(CONFIG), "--out", str(out), "--quiet"])
    return code, load_report(out / "report.json")  # validates against the report schema


def test_correct_app_passes_with_findings_and_canary_bounds(report):
    code, data = report
    target = data["targets"][0]
    assert code == 0 and target["verdict"]["status"] == "PASS", target["verdict"]
    codes = {f["values"]["code"]: f for f in target["findings"] if f["id"] == "flower-check"}
    assert {"transcript-passes", "accounted-rows", "canary-estimate", "weighted-by-examples"} <= set(codes)
    assert not any(f["severity"] == "critical" for f in target["findings"])
    rows = codes["accounted-rows"]["values"]
    assert rows["runs_epsilon"] > rows["no-amplification_epsilon"]  # replace-one units: z/2
    probe = next(p for p in target["probes"] if p["name"] == "flower-canaries")
    assert probe["outcome"] == "ran" and probe["status"] in ("CONSISTENT", "UNTESTABLE")
    models = {(b["threat_model"], b["method"]) for b in probe["bounds"]}
    assert models == {(m, e) for m in ("final_model", "all_iterates") for e in ("one-run", "fdp-one-run")} | {
        ("all_iterates", "measured-shift")}
    assert all(0 <= b["epsilon"] < 8 for b in probe["bounds"])


def test_accounting_is_what_flower_runs():
    spec = load_config(CONFIG)["targets"][0]
    target = FlowerTarget(spec)
    m = target.mechanism
    assert (m.sampling.value, m.neighbouring.value, m.population, m.rate) == ("fixed-size", "replace-one", 50, 1.0)
    assert target.releases == 2


def test_a_planted_app_through_the_cli_is_a_violation_with_a_valid_report(tmp_path):
    """noise-cut through ``dpaudit audit``: exit 1 and a report that validates (rule critical-finding; the
    report's consistency check once refused it, so the CLI exited 2 on every planted app)."""
    text = CONFIG.read_text(encoding="utf-8")
    text = text.replace('accountants = ["rdp", "pld", "dpa-rdp"]', 'accountants = ["rdp"]')
    text = text.replace("rounds = 2\n", 'rounds = 2\nbug = "noise-cut"\n', 1)
    assert 'bug = "noise-cut"' in text
    config = tmp_path / "planted.toml"
    config.write_text(text, encoding="utf-8")
    code = main(["audit", str(config), "--out", str(tmp_path / "out"), "--quiet"])
    target = load_report(tmp_path / "out" / "report.json")["targets"][0]  # validates
    assert code == 1 and target["verdict"]["status"] == "VIOLATION" and target["verdict"]["rule"] == "critical-finding"
    assert any(f["values"].get("code") == "noise-below-accounted" and f["severity"] == "critical"
               for f in target["findings"])


@pytest.mark.parametrize("bug, code", [("skip-round", "noise-below-accounted"), ("unequal-weights", "unequal-weights")])
def test_planted_apps_are_violations(bug, code):
    import dataclasses

    from dpfed.flower.example_app import BUG_ROUND

    spec = load_config(CONFIG)["targets"][0]
    spec = dataclasses.replace(spec, parameters={**spec.parameters, "bug": bug, "rounds": BUG_ROUND},
                               accountants=("rdp",))
    options = AuditOptions(seed=1, estimate=False, progress=False)
    result = audit_target(plan_target(spec, 0, options), options, lambda msg: None)
    assert result.verdict.status.value == "VIOLATION"
    found = [f for f in result.findings if f.id == "flower-check" and f.values["code"] == code]
    assert found and all(f.severity == "critical" for f in found)
    if bug == "skip-round":
        assert [f.values["round"] for f in found] == [BUG_ROUND]


@pytest.mark.parametrize("parameters, field", [({"sampled": "most"}, "parameters.sampled"),
                                               ({"bug": "typo"}, "parameters.bug"),
                                               ({"claims": ["nope"]}, "parameters.claims"),
                                               ({"claims": ["poisson", "poisson"]}, "parameters.claims"),
                                               ({"bug": "skip-round", "rounds": 1}, "parameters.rounds"),
                                               ({"colour": 1}, "parameters.colour")])
def test_bad_parameters_name_their_field(parameters, field):
    import dataclasses

    from accounting.errors import ConfigurationError

    spec = load_config(CONFIG)["targets"][0]
    with pytest.raises(ConfigurationError) as info:
        FlowerTarget(dataclasses.replace(spec, parameters={**spec.parameters, **parameters}))
    assert info.value.field.startswith(field)
    assert settings_from({"nodes": 5, "canaries": 3, "sampled": "all"}).sampled == 8
