"""Render a report as one self-contained HTML page: inline CSS, plots as inline SVG, no scripts and no
network access. A pure function of the report dict, so re-rendering a saved ``report.json`` gives the
same bytes."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from reports import plots
from reports.model import fmt_number

TEMPLATE_DIR = Path(__file__).with_name("templates")


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=select_autoescape(["html", "j2"]),
        keep_trailing_newline=True,
    )
    env.globals["f"] = fmt_number
    env.globals["accounting_table"] = _accounting_table
    return env


def _accounting_table(rows: list[dict]) -> Markup:
    head = (
        '<table class="accounting"><tr><th>accountant</th><th>neighbouring</th><th>sampling</th>'
        "<th>delta</th><th>epsilon</th></tr>"
    )
    body = []
    for r in rows:
        value = fmt_number(r["epsilon"]) if r["status"] == "ok" else f"{r['status']}: {r['reason']}"
        name = r["accountant"] + (" *" if r.get("claimed_setting") else "")
        cells = [name, r["neighbouring"], r["sampling"], fmt_number(r["delta"]), value]
        body.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return Markup(head + "".join(body) + "</table>")


def _svg(text: str | None) -> Markup | None:
    return Markup(text) if text else None


def render_plots(report: dict) -> dict:
    """All plots of a report as inline SVG markup, indexed by target (and probe)."""
    targets = report["targets"]
    return {
        "epsilon": [_svg(plots.epsilon_rounds_svg(t["accounting"], t["claim"])) for t in targets],
        "roc": [
            [_svg(plots.roc_svg(p)) if p.get("available") else None for p in t["probes"]] for t in targets
        ],
        "utility": [_svg(plots.utility_svg(t["utility"])) for t in targets],
    }


def render_html(report: dict) -> str:
    """The whole report as an HTML document."""
    template = _environment().get_template("report.html.j2")
    config_json = json.dumps(report["provenance"]["config"], indent=2, sort_keys=True)
    return template.render(r=report, plots=render_plots(report), config_json=config_json)
