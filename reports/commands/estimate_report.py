"""The report of ``dpaudit estimate``: the user's scores as one audit target (claim, planner ceiling,
one probe section with the bounds, ROC and assumptions, verdict), written with the audit's renderers."""

from __future__ import annotations

import hashlib
import platform
import shlex
from pathlib import Path

from reports.audit.model import (
    Analytic,
    AnalyticResult,
    Claim,
    PlannerSection,
    ProbeSection,
    Series,
    TargetResult,
    TargetVerdict,
    Unavailable,
)

NO_MECHANISM = "scores only: dpaudit estimate is given scores, not a mechanism to account or run"


def _planner(data, delta: float, confidence: float, top: float) -> PlannerSection:
    estimator = ("one-run (Steinke et al. 2023), all canaries in one run" if data.kind == "one-run"
                 else "clopper-pearson (a single threshold; Bonferroni and split estimators reach less)")
    trials = data.scores.size if data.kind == "one-run" else int(min(w.size for w in data.worlds()))
    return PlannerSection(trials=trials, delta=delta, confidence=confidence, ceiling=top, perfect_ceiling=top,
                          trials_for_claim=None, estimator=estimator)


def _probe(data, bounds, verdict, roc, confidence: float, metrics=None) -> ProbeSection:
    from reports.audit.cache import thin_curve, trim_details
    from reports.commands.estimate_input import SELECTION

    fpr, tpr, auc = roc
    fpr, tpr = thin_curve(fpr, tpr)
    low, high = data.worlds()
    described = (f"{data.scores.size} canaries of one run, {high.size} included" if data.kind == "one-run"
                 else f"{low.size} trials without the canary, {high.size} with it")
    rows = []
    for b in bounds:
        row = b.to_dict()
        row["assumptions"] = f"{b.assumptions} Threshold choice: {SELECTION.get(b.method, 'n/a')}."
        row["details"] = trim_details(b.details)
        rows.append(row)
    return ProbeSection(
        name="user-scores", kind="scores", outcome="ran", threat_model="the user's own attack scores",
        description=f"scores from {data.source} ({data.kind}): {described}", trials=int(data.scores.size),
        params={"kind": data.kind, "file": data.source}, bounds=tuple(rows),
        roc=Series("empirical ROC", tuple(fpr), tuple(tpr)), auc=float(auc), tradeoff=None,
        status=verdict.status, p_value=verdict.p_value, ceiling=verdict.ceiling, confidence=confidence,
        roc_metrics=metrics,
    )


def target_result(data, bounds, verdict, roc, claim_epsilon: float, delta: float, confidence: float, metrics=None):
    """The scores as one audit target (``reports.audit.model.TargetResult``)."""
    from reports.audit import verdicts

    claim = Claim(claim_epsilon, delta, "add-remove", "one canary", source="dpaudit estimate --claim-epsilon")
    probe = _probe(data, bounds, verdict, roc, confidence, metrics)
    analytic = AnalyticResult(Analytic.UNDETERMINED, None, None)
    empirical = verdicts.empirical_verdict(claim, (probe,), confidence)
    status, rule = verdicts.combine(analytic, empirical)
    return TargetResult(
        name=f"scores in {Path(data.source).name}", algorithm="user-scores",
        description=f"Lower bounds on epsilon from the user's {data.kind} scores in {data.source}.",
        parameters={"kind": data.kind, "scores": int(data.scores.size)}, claim=claim,
        accounting=Unavailable(NO_MECHANISM), calibration=None,
        planner=_planner(data, delta, confidence, verdict.ceiling), probes=(probe,),
        utility=Unavailable(NO_MECHANISM), findings=(),
        verdict=TargetVerdict(status, rule, analytic, empirical, None, None),
    )


def _provenance(args, data) -> dict:
    from reports.commands.audit import _now, package_versions

    digest = hashlib.sha256(Path(data.source).read_bytes()).hexdigest()
    argv = getattr(args, "argv", None)
    config = {"scores": data.source, "kind": data.kind, "claim_epsilon": args.claim_epsilon,
              "delta": args.delta, "confidence": args.confidence, "seed": int(args.seed)}
    return {"packages": package_versions(), "python": platform.python_version(),
            "platform": f"{platform.system()} {platform.machine()}", "seed": int(args.seed), "config": config,
            "config_source": data.source, "config_hash": f"sha256:{digest}", "started": _now(), "finished": _now(),
            "duration_seconds": 0.0, "reused_sections": [], "reused_from": None,
            "command": shlex.join(["dpaudit", *argv]) if argv is not None else f"dpaudit estimate {data.source}"}


def write_report(args, data, bounds, verdict, roc, metrics=None) -> list[Path]:
    """report.json, report.md and report.html in ``args.out`` (atomically, as ``dpaudit audit`` does)."""
    from reports.commands.audit import render_report_set
    from reports.model import new_report
    from reports.report_files import locked_out_dir, swap_in_report_set

    target = target_result(data, bounds, verdict, roc, args.claim_epsilon, args.delta, args.confidence, metrics)
    report = new_report(f"dpaudit estimate: {Path(data.source).name}", [target], _provenance(args, data))
    out_dir = Path(args.out)
    with locked_out_dir(out_dir):
        return swap_in_report_set(out_dir, render_report_set(report))
