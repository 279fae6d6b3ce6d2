"""A PASS never hides a finding: the report's JSON (schema 2.1 ``findings`` tally), the top of the Markdown
and HTML renderings, the per-target lines and the `dpaudit audit` exit summary all show the verdict with
the count and worst severity of the findings that call for attention (every severity but info)."""

from __future__ import annotations

import json

import pytest

from accounting.errors import ConfigurationError
from reports.model import findings_tally, validate_report, verdict_headline
from reports.render_html import render_html
from reports.render_markdown import render_markdown
from reports.render_text import overall_headline, summary_lines
from tests.reports.synthetic_report import synthetic_report


def passing_report_with_a_high_finding() -> dict:
    """The synthetic report reduced to its first target, made a PASS (proved, no failed probe); the
    target keeps its high-severity large-delta finding, as DP-FTS-DE does in the default audit."""
    report = json.loads(json.dumps(synthetic_report()))
    target = report["targets"][0]
    target["verdict"].update(status="PASS", rule="proved")
    target["verdict"]["empirical"]["failed"] = []
    target["findings"].append(
        {"id": "claim-holds", "severity": "info", "values": {"accountant": "exact", "upper_bound": 0.75}}
    )
    report.update(targets=[target], status="PASS", exit_code=0, findings=findings_tally([target]))
    return validate_report(report)


def test_tally_counts_attention_findings_and_names_the_worst():
    targets = [
        {"findings": [{"severity": "info"}, {"severity": "medium"}]},
        {"findings": [{"severity": "high"}, {"severity": "low"}]},
    ]
    tally = findings_tally(targets)
    assert tally["count"] == 3 and tally["worst"] == "high"
    assert tally["by_severity"] == {"critical": 0, "high": 1, "medium": 1, "low": 1, "info": 1}
    assert findings_tally([{"findings": [{"severity": "info"}]}])["worst"] is None
    assert verdict_headline("PASS", tally) == "PASS, with 3 findings (worst: high)"
    assert verdict_headline("PASS", findings_tally([{"findings": [{"severity": "info"}]}])) == "PASS, no findings"
    one = findings_tally([{"findings": [{"severity": "critical"}]}])
    assert verdict_headline("VIOLATION", one) == "VIOLATION, with 1 finding (worst: critical)"


def test_a_pass_shows_its_high_finding_in_json_markdown_html_and_summary():
    report = passing_report_with_a_high_finding()
    assert report["schema_version"] == "2.2"
    assert report["findings"]["count"] == 1 and report["findings"]["worst"] == "high"
    md = render_markdown(report)
    assert md.splitlines()[2].startswith("**Overall verdict: PASS, with 1 finding (worst: high)**")
    assert "| verdict | PASS, with 1 finding (worst: high) |" in md
    html = render_html(report)
    top = html[html.index('id="overall-status"') : html.index("</p>", html.index('id="overall-status"'))]
    assert ">PASS</span>" in top and 'class="findings-badge sev-high"' in top and "with 1 finding (worst: high)" in top
    assert overall_headline(report) == "PASS, with 1 finding (worst: high)"
    assert summary_lines(report)[0].startswith("synthetic <target>: PASS, with 1 finding (worst: high) - ")


def test_a_report_without_the_tally_still_reads_and_renders():
    """Schema 2.0 reports have no tally; they validate and the renderers compute it from the targets."""
    report = passing_report_with_a_high_finding()
    del report["findings"]
    report["schema_version"] = "2.0"
    validate_report(report)
    assert "Overall verdict: PASS, with 1 finding (worst: high)" in render_markdown(report)


@pytest.mark.parametrize(
    "key, value",
    [("count", 0), ("worst", None), ("by_severity", {"critical": 0, "high": 0, "medium": 0, "low": 0, "info": 1})],
)
def test_a_tampered_tally_is_refused(key, value):
    report = passing_report_with_a_high_finding()
    report["findings"][key] = value
    with pytest.raises(ConfigurationError, match=f"findings/{key}"):
        validate_report(report)


PASS_WITH_A_HIGH_FINDING = """
title = "headline test"
seed = 3
[[target]]
name = "Gaussian, analytic calibration, delta large for its population"
algorithm = "mechanism"
accountants = ["exact"]
[target.parameters]
type = "gaussian"
calibration = "analytic"
[target.claim]
epsilon = 2.0
delta = 0.01
neighbouring = "add-remove"
unit = "one record"
units = 100
unit_plural = "records"
[[target.probes]]
name = "gaussian"
trials = 2000
"""


def test_the_audit_summary_on_stdout_shows_the_findings(tmp_path, capsys):
    """A proved claim (PASS) whose delta = 0.01 is 1/N for N = 100 records: the large-delta finding
    (high) appears with the PASS in the target line, the exit summary and the saved report."""
    from reports.cli import main
    from reports.model import load_report

    config = tmp_path / "audit.toml"
    config.write_text(PASS_WITH_A_HIGH_FINDING)
    assert main(["audit", str(config), "--out", str(tmp_path / "out"), "--quiet"]) == 0  # exit code unchanged
    out = capsys.readouterr().out
    report = load_report(tmp_path / "out" / "report.json")
    tally = report["findings"]
    assert report["status"] == "PASS" and tally["worst"] == "high" and tally["count"] >= 1
    headline = verdict_headline("PASS", tally)
    assert f"overall: {headline}; wrote" in out
    assert out.splitlines()[0].startswith(f"{report['targets'][0]['name']}: {headline} - ")
