"""Render a report as one self-contained HTML page: inline CSS, plots as inline SVG, no scripts and no
network access. A pure function of the report dict, so re-rendering a saved ``report.json`` gives the
same bytes. Every text is escaped (autoescape; SVG labels in ``reports.plots``); element ids inside the
inline SVGs are prefixed per plot so the page has no duplicate ids."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from accounting.vocabulary import NOT_RIGOROUS
from reports import plots
from reports import render_text as words
from reports.model import findings_tally, fmt_number
from reports.power_words import audit_power_text
from reports.render_markdown import collapsed_rows

TEMPLATE_DIR = Path(__file__).with_name("templates")
_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^)"]+)')


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=select_autoescape(["html", "j2"]),
        keep_trailing_newline=True,
    )
    env.globals["f"] = fmt_number
    env.globals["not_rigorous"] = NOT_RIGOROUS
    env.globals["accounting_table"] = _accounting_table
    env.globals["ceiling_words"] = words.CEILING_WORDS
    env.globals["audit_power_text"] = audit_power_text
    env.globals["budget_text"] = words.budget_text
    env.globals["power_text"] = words.power_text
    env.globals["probe_roc_text"] = words.probe_roc_text
    return env


def _accounting_table(rows: list[dict]) -> Markup:
    head = (
        '<table class="accounting"><tr><th>accountant</th><th>neighbouring</th><th>sampling</th>'
        "<th>delta</th><th>epsilon</th></tr>"
    )
    body = ["<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in collapsed_rows(rows)]
    return Markup(head + "".join(body) + "</table>")


def unique_ids(svg: str, prefix: str) -> str:
    """Prefix every id of one SVG (and every reference to it) so several SVGs share a page safely."""
    svg = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    return _REF.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)


def _svg(text: str | None, prefix: str) -> Markup | None:
    return Markup(unique_ids(text, prefix)) if text else None


def render_plots(report: dict) -> dict:
    """All plots of a report as inline SVG markup, indexed by target (and probe)."""
    targets = report["targets"]
    return {
        "summary": _svg(plots.summary_svg(report), "summary"),
        "epsilon": [
            _svg(plots.epsilon_rounds_svg(t["accounting"], t["claim"]), f"t{i}-eps") for i, t in enumerate(targets)
        ],
        "roc": [
            [
                _svg(plots.roc_svg(p, t["claim"]), f"t{i}-roc{j}") if p["outcome"] == "ran" else None
                for j, p in enumerate(t["probes"])
            ]
            for i, t in enumerate(targets)
        ],
        "utility": [_svg(plots.utility_svg(t["utility"]), f"t{i}-util") for i, t in enumerate(targets)],
    }


def _texts(report: dict) -> dict:
    targets = report["targets"]
    return {
        "summary": words.summary_lines(report),
        "headline": words.overall_headline(report),
        "tally": words.report_tally(report),
        "target_headlines": [words.target_headline(t) for t in targets],
        "target_worst": [findings_tally([t])["worst"] for t in targets],
        "reasons": [words.verdict_reason(t) for t in targets],
        "gaps": [words.gap_text(t["verdict"]) for t in targets],
        "claims": [words.claim_text(t["claim"]) for t in targets],
        "findings": [[words.finding_text(x, t["claim"]) for x in t["findings"]] for t in targets],
        "notes": [words.explanations(t) for t in targets],
        "calibrations": [
            words.calibration_text(t["calibration"])
            if t["calibration"] and t["calibration"].get("available", True) is not False
            else ""
            for t in targets
        ],
        "planners": [words.planner_text(t["planner"]) for t in targets],
        "bugs": [[words.planted_bug_note(p) for p in t["probes"]] for t in targets],
        "utilities": [
            words.utility_note(t["utility"]) if t["utility"].get("available", True) is not False else ""
            for t in targets
        ],
    }


def render_html(report: dict) -> str:
    """The whole report as an HTML document."""
    template = _environment().get_template("report.html.j2")
    config_json = json.dumps(report["provenance"]["config"], indent=2, sort_keys=True)
    return template.render(r=report, plots=render_plots(report), config_json=config_json, **_texts(report))
