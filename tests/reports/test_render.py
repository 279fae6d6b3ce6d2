"""Markdown and HTML renderers: content, escaping, self-containment and determinism."""

from __future__ import annotations

import json
import re

from reports.cli import main
from reports.model import save_report
from reports.render_html import render_html
from reports.render_markdown import render_markdown
from tests.reports.synthetic_report import synthetic_report


def test_markdown_has_every_section():
    md = render_markdown(synthetic_report())
    for heading in (
        "### Claim",
        "### Findings",
        "### Accounting",
        "### Calibration check",
        "### Planner",
        "### Probes",
        "### Reading this target",
        "### Utility",
        "## Provenance",
        "Contents:",
    ):
        assert heading in md
    assert "Declined: samples fixed-size" in md and "Failed: worker killed" in md
    assert "Not available: accountants failed" in md
    assert "failed: ImportError: x\\|y" in md  # table cells are escaped
    assert "| analytic verdict | PROVED |" in md and "| gap | 0.5 |" in md
    # an all-unsupported setting is one row; a tiny standard error is shown as 0, not 2.74e-18
    assert md.count("| replace-one | fixed-size |") == 1 and "2.74e-18" not in md
    # the per-probe confidence is explained, the ceiling is that of the estimator used
    assert "0.975" in md and "split over its 2 probes" in md
    assert "a perfect attack could certify at most epsilon = 7.4" in md
    assert "synthetic &lt;target>" in md and "<target>" not in md  # raw HTML from config text is escaped


def test_html_is_self_contained_escaped_and_has_its_plots():
    html = render_html(synthetic_report())
    assert html.count('class="plot"') == 4  # summary, epsilon over rounds, ROC, utility
    assert 'id="summary-figure"' in html and 'href="#target-1"' in html  # summary figure and contents
    assert 'aria-label="ROC of probe gaussian"' in html
    assert "synthetic &lt;target&gt;" in html and "A synthetic target &amp; co." in html
    assert "<script" not in html and "<link" not in html and "<img" not in html
    external = [u for u in re.findall(r'(?:href|src)="([^"#]+)"', html)]
    assert external == []
    assert "http://" not in re.sub(
        r'xmlns(:\w+)?="http[^"]*"|"http://www\.w3\.org[^"]*"|http://purl\.org[^"<]*|'
        r'http://creativecommons\.org[^"<]*|https?://matplotlib\.org[^"<]*',
        "",
        html,
    )


def test_rendering_is_deterministic_and_survives_a_json_round_trip():
    report = synthetic_report()
    loaded = json.loads(json.dumps(report))
    assert render_markdown(report) == render_markdown(loaded)
    assert render_html(report) == render_html(loaded) == render_html(loaded)


def test_report_command_rerenders(tmp_path, capsys):
    report = synthetic_report()
    path = tmp_path / "report.json"
    save_report(report, path)
    code = report["exit_code"]  # `report` exits with the saved verdict's code, as `audit` did
    assert main(["report", str(path), "--format", "md"]) == code
    assert capsys.readouterr().out == render_markdown(json.loads(path.read_text()))
    out = tmp_path / "again"
    assert main(["report", str(path), "--format", "html", "--out", str(out)]) == code
    assert (out / "report.html").read_text() == render_html(json.loads(path.read_text()))


def test_report_exits_with_each_verdicts_code_and_reads_the_probe_words_of_21(tmp_path, capsys):
    """0 PASS, 1 VIOLATION, 3 INCONCLUSIVE (``reports.exit_codes``); a 2.1 report's CONSISTENT / UNTESTABLE read as
    PASS / INCONCLUSIVE."""
    from reports.exit_codes import ExitCode

    report = synthetic_report()
    statuses = {t["verdict"]["status"] for t in report["targets"]}
    assert report["status"] in statuses and report["exit_code"] == int(ExitCode[report["status"]])
    first = {**report, "targets": report["targets"][:1]}
    first["status"] = first["targets"][0]["verdict"]["status"]
    first["exit_code"] = int(ExitCode[first["status"]])
    from reports.findings_tally import findings_tally

    first["findings"] = findings_tally(first["targets"])
    for case in (report, first):
        path = tmp_path / "r.json"
        save_report(case, path)
        assert main(["report", str(path), "--format", "json"]) == int(ExitCode[case["status"]])
        capsys.readouterr()
    old = json.loads(json.dumps(report).replace('"status": "PASS", "p_value"', '"status": "CONSISTENT", "p_value"'))
    old["schema_version"] = "2.1"
    for target in old["targets"]:
        empirical = target["verdict"]["empirical"]
        empirical["status"] = {"PASS": "CONSISTENT", "INCONCLUSIVE": "UNTESTABLE"}.get(empirical["status"],
                                                                                       empirical["status"])
    assert "UNTESTABLE" in json.dumps(old)
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert main(["report", str(tmp_path / "old.json"), "--format", "json"]) == report["exit_code"]
    shown = json.loads(capsys.readouterr().out)
    assert "CONSISTENT" not in json.dumps(shown) and "UNTESTABLE" not in json.dumps(shown)


def test_report_command_bad_input_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    assert main(["report", str(bad), "--format", "md"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "result" in err
    assert main(["report", str(tmp_path / "nope.json")]) == 2
    capsys.readouterr()
    assert main(["report", str(bad), "--format", "pdf"]) == 2  # argparse refuses the choice itself
    assert capsys.readouterr().err.strip().count("\n") == 0


def test_html_ids_are_unique():
    html = render_html(synthetic_report())
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) > 20 and len(ids) == len(set(ids))


HOSTILE = '"><img src=x onerror=alert(1)>'


def test_hostile_text_from_a_hand_edited_report_is_escaped_everywhere():
    report = synthetic_report()
    report["targets"][0]["probes"][0]["name"] = HOSTILE
    report["targets"][0]["probes"][0]["threat_model"] = "-->" + HOSTILE
    report["targets"][0]["name"] = HOSTILE + " $x$"
    report["targets"][0]["utility"]["metric"] = HOSTILE
    html = render_html(report)
    assert "<img" not in html  # neither in the page nor in any SVG aria-label, title or comment
    md = render_markdown(report)
    assert "<img" not in md and "&lt;img src=x onerror=alert(1)>" in md


def test_an_infinite_epsilon_survives_json_and_renders():
    """A non-private configuration: the accountants say epsilon = inf. The JSON holds "inf" (never an
    Infinity token), the report validates and both renderings show it."""
    from reports.model import dumps_report, validate_report

    report = synthetic_report()
    target = report["targets"][0]
    for row in target["accounting"]["rows"][:2]:  # exact and rdp: every accountant that ran says inf
        row["epsilon"] = "inf"
    target["verdict"].update(upper_bound={"epsilon": "inf", "source": "exact"}, gap="inf")  # gap = upper - lower
    # the tight exact accountant's infinite epsilon refutes the claim (the report checks its verdicts)
    target["verdict"].update(status="VIOLATION", rule="refuted",
                             analytic={"status": "REFUTED", "epsilon": "inf", "accountant": "exact"})
    report.update(status="VIOLATION", exit_code=1)
    text = dumps_report(validate_report(report))
    assert "Infinity" not in text and '"inf"' in text
    assert "| exact * | add-remove | none | 1e-05 | inf |" in render_markdown(json.loads(text))
    assert "<td>inf</td>" in render_html(json.loads(text))
