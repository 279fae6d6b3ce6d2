"""Render a report (the dict of ``reports.model``) as Markdown. Pure function of the report: the same
JSON always gives the same text. Plots live in the HTML rendering; Markdown gives their numbers."""

from __future__ import annotations

import json

from reports.model import fmt_number as f
from reports.model import is_available


def _table(header: list[str], rows: list[list]) -> list[str]:
    def cell(value):
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _accounting_rows(rows: list[dict]) -> list[list]:
    return [
        [
            r["accountant"] + (" *" if r.get("claimed_setting") else ""),
            r["neighbouring"],
            r["sampling"],
            f(r["delta"]),
            f(r["epsilon"]) if r["status"] == "ok" else f"{r['status']}: {r['reason']}",
        ]
        for r in rows
    ]


def _accounting(acc: dict, claim: dict) -> list[str]:
    out = ["### Accounting", ""]
    if not is_available(acc):
        return out + [f"Not available: {acc['reason']}", ""]
    out += [
        f"Mechanism: {acc['mechanism']}",
        "",
        f"Epsilon at the claimed delta = {f(claim['delta'])} (* = the claimed neighbouring relation and "
        "sampling scheme):",
        "",
    ]
    out += _table(
        ["accountant", "neighbouring", "sampling", "delta", "epsilon"], _accounting_rows(acc["rows"])
    )
    if acc.get("at_reference_delta"):
        out += [f"The claimed setting at delta = {f(acc.get('reference_delta'))}:", ""]
        out += _table(
            ["accountant", "neighbouring", "sampling", "delta", "epsilon"],
            _accounting_rows(acc["at_reference_delta"]),
        )
    if acc["notes"]:
        out += ["Notes:", ""] + [f"- {n}" for n in acc["notes"]] + [""]
    over = acc["over_rounds"]
    if is_available(over):
        out += [f"Epsilon over rounds at delta = {f(claim['delta'])}:", ""]
        header = ["rounds"] + [s.get("label", "") for s in over["series"]]
        rows = [[r] + [f(s["y"][i]) for s in over["series"]] for i, r in enumerate(over["rounds"])]
        out += _table(header, rows)
    else:
        out += [f"Epsilon over rounds: not available: {over['reason']}", ""]
    return out


def _calibration(cal: dict | None) -> list[str]:
    if not cal:
        return []
    out = ["### Calibration check", ""]
    if not is_available(cal):
        return out + [f"Not available: {cal['reason']}", ""]
    out += [cal["text"], ""]
    if cal.get("grid"):
        out += _table(
            ["epsilon", "delta", "classic sigma", "true delta of classic sigma", "analytic sigma", "holds"],
            [
                [
                    f(g["epsilon"]),
                    f(g["delta"]),
                    f(g["noise_multiplier"]),
                    f(g["true_delta"]),
                    f(g["analytic_noise_multiplier"]),
                    "no" if g["violated"] else "yes",
                ]
                for g in cal["grid"]
            ],
        )
    return out


def _probe(p: dict) -> list[str]:
    out = [f"#### Probe `{p['name']}` ({p['kind']})", ""]
    if not p["available"]:
        return out + [f"Not available: {p['reason']}", ""]
    out += [
        f"- Threat model: {p['threat_model']}",
        f"- Trials per world: {p['trials']}",
        f"- Description: {p.get('description', '')}",
    ]
    if p.get("params"):
        out.append("- Parameters: " + ", ".join(f"{k} = {v}" for k, v in sorted(p["params"].items())))
    if p.get("true_epsilon") is not None:
        out.append(f"- Epsilon of the attacked mechanism (accountant): {f(p['true_epsilon'])}")
    if p.get("auc") is not None:
        out.append(f"- AUC of the attack: {f(p['auc'])}")
    out.append("")
    out += _table(
        ["estimator", "epsilon lower bound", "delta", "confidence", "rigorous", "assumptions"],
        [
            [
                b["method"],
                f(b["epsilon"]),
                f(b["delta"]),
                f(b["confidence"]),
                "yes" if b["rigorous"] else "no (model-based or Bayesian)",
                b["assumptions"],
            ]
            for b in p["bounds"]
        ],
    )
    return out


def _verdict(v: dict) -> list[str]:
    out = ["### Verdict", "", f"**{v['status']}** - {v['reason']}", ""]
    out.append(f"- p-value of the probes' test (null: the claim holds): {f(v['p_value'])}")
    if v.get("upper_bound"):
        u = v["upper_bound"]
        out.append(f"- Tight upper bound: epsilon = {f(u['epsilon'])} ({u['source']})")
    if v.get("lower_bound"):
        lb = v["lower_bound"]
        out.append(f"- Best rigorous lower bound: epsilon = {f(lb['epsilon'])} ({lb['source']})")
    out.append(f"- Gap between them: {f(v['gap'])}")
    if v.get("ceiling") is not None:
        out.append(f"- Largest epsilon the trials could certify (planner ceiling): {f(v['ceiling'])}")
    analytic = v.get("analytic")
    if analytic:
        out.append(f"- Analytic check: {analytic['text']}")
    return out + [""]


def _utility(u: dict) -> list[str]:
    out = ["### Utility", ""]
    if not is_available(u):
        return out + [f"Not available: {u['reason']}", ""]
    out += [
        f"{u['metric']} after {u['rounds'][-1] if u['rounds'] else 0} rounds: {f(u['final'])}"
        + (f" (mean of {u['runs']} runs)" if u.get("runs") else ""),
        "",
    ]
    if u.get("note"):
        out += [u["note"], ""]
    idx = sorted(set(range(0, len(u["rounds"]), max(1, len(u["rounds"]) // 6))) | {len(u["rounds"]) - 1})
    spent = u.get("epsilon_spent") or [None] * len(u["rounds"])
    stderr = u.get("stderr") or [None] * len(u["rounds"])
    out += _table(
        [
            "round",
            u["metric"],
            "standard error",
            f"epsilon spent ({u['epsilon_accountant']})" if u.get("epsilon_accountant") else "epsilon spent",
        ],
        [[u["rounds"][i], f(u["values"][i]), f(stderr[i]), f(spent[i])] for i in idx if i >= 0],
    )
    return out


def _target(t: dict) -> list[str]:
    out = (
        [f"## {t['name']}", ""]
        + ([t["description"], ""] if t["description"] else [])
        + [
            f"Algorithm: `{t['algorithm']}`; parameters: "
            + ", ".join(f"{k} = {v}" for k, v in sorted(t["parameters"].items())),
            "",
            "### Claim",
            "",
            t["claim"]["text"],
            "",
        ]
    )
    if t["findings"]:
        out += ["### Findings", ""] + [
            f"- **{x['severity']}** ({x['id']}): {x['text']}" for x in t["findings"]
        ]
        out.append("")
    out += _accounting(t["accounting"], t["claim"]) + _calibration(t["calibration"])
    out += ["### Planner", ""]
    pl = t["planner"]
    if is_available(pl):
        out += [
            f"With {pl['trials']} trials per world at delta = {f(pl['delta'])} and confidence "
            f"{f(pl['confidence'])}, no attack can certify more than epsilon = {f(pl['ceiling'])}"
            + (
                f"; certifying the claimed epsilon needs {pl['trials_for_claim']} trials per world."
                if pl.get("trials_for_claim")
                else "."
            ),
            "",
        ]
    else:
        out += [f"Not available: {pl['reason']}", ""]
    out += ["### Probes", ""]
    if not t["probes"]:
        out += ["No probes configured.", ""]
    for p in t["probes"]:
        out += _probe(p)
    return out + _verdict(t["verdict"]) + _utility(t["utility"])


def _provenance(p: dict) -> list[str]:
    out = [
        "## Provenance",
        "",
        f"- Seed: {p['seed']}",
        f"- Configuration hash: `{p['config_hash']}`",
        f"- Configuration source: {p.get('config_source', 'n/a')}",
        f"- Python: {p['python']}",
        f"- Platform: {p.get('platform', 'n/a')}",
        f"- Command: `{p.get('command', 'n/a')}`",
        f"- Started: {p.get('started', 'n/a')}",
        f"- Finished: {p.get('finished', 'n/a')}",
        f"- Duration: {f(p.get('duration_seconds'))} s",
    ]
    if p.get("resumed_sections"):
        out.append(f"- Sections reused from an interrupted run: {', '.join(p['resumed_sections'])}")
    out += ["", "Package versions:", ""]
    out += _table(["package", "version"], [[k, v] for k, v in sorted(p["packages"].items())])
    out += ["Configuration:", "", "```json", json.dumps(p["config"], indent=2, sort_keys=True), "```", ""]
    return out


def render_markdown(report: dict) -> str:
    """The whole report as Markdown text (ends with one newline)."""
    lines = [
        f"# {report['title']}",
        "",
        f"**Overall verdict: {report['status']}** (exit code "
        f"{report['exit_code']}; report schema {report['schema_version']})",
        "",
    ]
    lines += [f"- {s}" for s in report["summary"]] + [""]
    for target in report["targets"]:
        lines += _target(target)
    lines += _provenance(report["provenance"])
    return "\n".join(lines).rstrip("\n") + "\n"
