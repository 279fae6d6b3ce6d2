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
        "### Verdict",
        "### Utility",
        "## Provenance",
    ):
        assert heading in md
    assert "Not available: not built yet" in md and "Not available: accountants failed" in md
    assert "failed: ImportError: x\\|y" in md  # table cells are escaped
    assert "no (model-based or Bayesian)" in md and "Gap between them: 0.5" in md


def test_html_is_self_contained_escaped_and_has_its_plots():
    html = render_html(synthetic_report())
    assert html.count('class="plot"') == 3  # epsilon over rounds, ROC, utility
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
    assert main(["report", str(path), "--format", "md"]) == 0
    assert capsys.readouterr().out == render_markdown(json.loads(path.read_text()))
    out = tmp_path / "again.html"
    assert main(["report", str(path), "--format", "html", "--out", str(out)]) == 0
    assert out.read_text() == render_html(json.loads(path.read_text()))


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
