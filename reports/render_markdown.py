"""Render a report (the JSON of ``reports.model``) as Markdown. A pure function of the report: the same
JSON always gives the same text. Text from the configuration is escaped (no raw HTML reaches a Markdown
viewer). Plots live in the HTML rendering; Markdown gives their numbers."""

from __future__ import annotations

import json
import re

from accounting.vocabulary import NOT_RIGOROUS
from reports import render_text as words
from reports.model import fmt_number as f
from reports.model import is_available
from reports.power_words import audit_power_text

_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def esc(value) -> str:
    """Text safe inside Markdown: every '<' that could open an HTML tag or comment is escaped (a viewer
    shows it, never interprets it), table pipes and newlines are neutralised; '<=' stays readable."""
    return _TAG_START.sub("&lt;", str(value)).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return lines + [""]


def collapsed_rows(rows: list[dict]) -> list[list]:
    """Accounting rows; a setting where no accountant answered is one row."""
    out, seen = [], set()
    for r in rows:
        setting = (r["neighbouring"], r["sampling"])
        group = [x for x in rows if (x["neighbouring"], x["sampling"]) == setting]
        if all(x["status"] != "ok" for x in group):
            if setting not in seen:
                seen.add(setting)
                out.append(["all " + str(len(group)), *setting, f(r["delta"]), f"{r['status']}: {r['reason']}"])
            continue
        value = f(r["epsilon"]) if r["status"] == "ok" else f"{r['status']}: {r['reason']}"
        out.append([r["accountant"] + (" *" if r.get("claimed_setting") else ""), *setting, f(r["delta"]), value])
    return out


def _accounting(acc: dict, claim: dict) -> list[str]:
    out = ["### Accounting", ""]
    if not is_available(acc):
        return out + [f"Not available: {esc(acc['reason'])}", ""]
    header = ["accountant", "neighbouring", "sampling", "delta", "epsilon"]
    out += [
        f"Mechanism: {esc(acc['mechanism'])} x {acc['releases']} releases",
        "",
        f"Epsilon at the claimed delta = {f(claim['delta'])} (* = the claimed setting):",
        "",
    ]
    out += _table(header, collapsed_rows(acc["rows"]))
    if acc["at_reference_delta"]:
        out += [f"The claimed setting at delta = {f(acc['reference_delta'])}:", ""]
        out += _table(header, collapsed_rows(acc["at_reference_delta"]))
    out += (["Notes:", ""] + [f"- {esc(n)}" for n in acc["notes"]] + [""]) if acc["notes"] else []
    if acc["over_rounds"]:
        out += [f"Epsilon over rounds at delta = {f(claim['delta'])}:", ""]
        series = acc["over_rounds"]
        rows = [[int(x)] + [f(s["y"][i]) for s in series] for i, x in enumerate(series[0]["x"])]
        out += _table(["rounds"] + [s["label"] for s in series], rows)
    else:
        out += [f"Epsilon over rounds: not available: {esc(acc.get('over_rounds_reason'))}", ""]
    return out


def _calibration(cal: dict | None) -> list[str]:
    if not cal:
        return []
    out = ["### Calibration check", ""]
    if not is_available(cal):
        return out + [f"Not available: {esc(cal['reason'])}", ""]
    rows = [
        [
            f(g["epsilon"]),
            f(g["delta"]),
            f(g["noise_multiplier"]),
            f(g["true_delta"]),
            f(g["analytic_noise_multiplier"]),
            "no" if g["violated"] else "yes",
        ]
        for g in cal["grid"]
    ]
    return (
        out
        + [esc(words.calibration_text(cal)), ""]
        + _table(["epsilon", "delta", "classic sigma", "true delta of classic sigma", "analytic sigma", "holds"], rows)
    )


def _probe(p: dict) -> list[str]:
    out = [f"#### Probe `{esc(p['name'])}` ({esc(p['kind'])}){esc(words.planted_bug_note(p))}", ""]
    if p["outcome"] != "ran":
        return out + [f"{p['outcome'].capitalize()}: {esc(p['reason'])}", ""]
    out += [
        f"- Threat model: {esc(p['threat_model'])}",
        f"- {words.budget_text(p)}",
        f"- Description: {esc(p['description'])}",
        "- Parameters: " + ", ".join(f"{esc(k)} = {esc(v)}" for k, v in sorted(p["params"].items())),
        f"- Epsilon of the attacked mechanism (accountant): {f(p['true_epsilon'])}",
        f"- AUC of the attack: {f(p['auc'])}",
        f"- ROC metrics: {esc(words.probe_roc_text(p))}",
        f"- Ceiling: {words.CEILING_WORDS.format(ceiling=f(p['ceiling']))} (confidence {f(p['confidence'])})",
        f"- Power: {esc(words.power_text(p))}",
        "",
    ]
    rows = [
        [
            b["method"],
            f(b["epsilon"]),
            f(b["delta"]),
            f(b["confidence"]),
            "yes" if b["rigorous"] else f"no: {NOT_RIGOROUS}",
            b.get("assumptions", ""),
        ]
        for b in p["bounds"]
    ]
    return out + _table(["estimator", "epsilon lower bound", "delta", "confidence", "rigorous", "assumptions"], rows)


def summary_table(t: dict) -> list[str]:
    """The one-screen summary of a target: claim, both verdicts, bounds and the gap."""
    v = t["verdict"]
    upper, lower = v.get("upper_bound"), v["empirical"].get("lower_bound")
    rows = [
        ["claim", f"({f(t['claim']['epsilon'])}, {f(t['claim']['delta'])}), {t['claim']['neighbouring']}"],
        ["analytic verdict", v["analytic"]["status"]],
        ["empirical verdict", v["empirical"]["status"]],
        ["verdict", words.target_headline(t)],
        ["tightest upper bound", "n/a" if not upper else f"{f(upper['epsilon'])} ({upper['source']})"],
        ["best rigorous lower bound", "n/a" if not lower else f"{f(lower['epsilon'])} ({lower['source']})"],
        ["gap", words.gap_text(v)],
        ["ceiling of the estimator used", f(v["empirical"].get("ceiling"))],
    ]
    return _table(["", ""], rows) + [f"**{words.target_headline(t)}** - {esc(words.verdict_reason(t))}", ""]


def _utility(u: dict) -> list[str]:
    out = ["### Utility", ""]
    if not is_available(u):
        return out + [f"Not available: {esc(u['reason'])}", ""]
    out += [
        f"{esc(u['metric'])} after {u['rounds'][-1]} rounds: {f(u['final'])} (mean of {u['runs']} runs)",
        "",
        esc(words.utility_note(u)),
        "",
    ]
    idx = sorted(set(range(0, len(u["rounds"]), max(1, len(u["rounds"]) // 6))) | {len(u["rounds"]) - 1})
    rows = [
        [u["rounds"][i], f(u["values"][i]), words.fmt_stderr(u["stderr"][i], u["values"][i]), f(u["epsilon_spent"][i])]
        for i in idx
    ]
    return out + _table(["round", u["metric"], "standard error", f"epsilon spent ({u['epsilon_accountant']})"], rows)


def _target(i: int, t: dict) -> list[str]:
    out = [f"## {i + 1}. {esc(t['name'])}", ""] + ([esc(t["description"]), ""] if t["description"] else [])
    out += summary_table(t) + ["### Claim", "", esc(words.claim_text(t["claim"])), ""]
    if t["findings"]:
        out += (
            ["### Findings", ""]
            + [f"- **{x['severity']}** ({x['id']}): {esc(words.finding_text(x, t['claim']))}" for x in t["findings"]]
            + [""]
        )
    notes = words.explanations(t)
    out += (["### Reading this target", ""] + [f"- {esc(n)}" for n in notes] + [""]) if notes else []
    out += [
        f"Algorithm: `{esc(t['algorithm'])}`; parameters: "
        + ", ".join(f"{esc(k)} = {esc(v)}" for k, v in sorted(t["parameters"].items())),
        "",
    ]
    out += _accounting(t["accounting"], t["claim"]) + _calibration(t["calibration"])
    power = audit_power_text(t["probes"], t["verdict"].get("rule"), t.get("findings"))
    out += ["### Planner", "", esc(words.planner_text(t["planner"])), "", esc(power), ""]
    out += ["### Probes", ""]
    out += ["No probes configured.", ""] if not t["probes"] else []
    for p in t["probes"]:
        out += _probe(p)
    return out + _utility(t["utility"])


def _provenance(p: dict) -> list[str]:
    out = [
        "## Provenance",
        "",
        f"- Seed: {p['seed']}",
        f"- Configuration hash: `{p['config_hash']}`",
        f"- Configuration source: {esc(p.get('config_source', 'n/a'))}",
        f"- Python: {p['python']}",
        f"- Platform: {esc(p.get('platform', 'n/a'))}",
        f"- Command: `{esc(p['command'])}`",
        f"- Started: {p.get('started', 'n/a')}",
        f"- Finished: {p.get('finished', 'n/a')}",
        f"- Duration: {f(p.get('duration_seconds'))} s",
    ]
    if p.get("reused_sections"):
        out.append(
            f"- Sections reused from an earlier {p.get('reused_from') or 'run'} in this directory: "
            f"{', '.join(p['reused_sections'])}"
        )
    out += ["", "Package versions:", ""] + _table(["package", "version"], sorted(p["packages"].items()))
    config = json.dumps(p["config"], indent=2, sort_keys=True).replace("`", "\\u0060")  # cannot end the fence
    return out + ["Configuration:", "", "```json", config, "```", ""]


def render_markdown(report: dict) -> str:
    """The whole report as Markdown text (ends with one newline)."""
    lines = [
        f"# {esc(report['title'])}",
        "",
        f"**Overall verdict: {words.overall_headline(report)}** (exit code {report['exit_code']}; report schema "
        f"{report['schema_version']})",
        "",
    ]
    lines += [f"- {esc(s)}" for s in words.summary_lines(report)] + ["", "Contents:", ""]
    lines += [f"{i + 1}. {esc(t['name'])}" for i, t in enumerate(report["targets"])] + ["", ""]
    for i, target in enumerate(report["targets"]):
        lines += _target(i, target)
    lines += _provenance(report["provenance"])
    return "\n".join(lines).rstrip("\n") + "\n"
