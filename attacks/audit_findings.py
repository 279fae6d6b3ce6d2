"""Findings of an audit, computed from its numbers (never hard-coded): whether the claim holds by the
accountants, whether delta is large for the number of protected units, what the configuration spends
at a conventional delta, the other neighbouring relation, and whether a calibration formula fails.
Also the calibration-check section and the combined verdict of a target.
"""

from __future__ import annotations

import math

from accounting.calibration import check_classic_calibration, classic_failure_threshold
from attacks.audit_accounting import best_upper_bound

CALIBRATION_GRID = (0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 16.0, 20.0)


def _g(value) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def calibration_section(epsilon: float, delta: float, method: str) -> dict:
    """Check the classic formula sigma = sqrt(2 ln(1.25/delta))/epsilon against the exact Gaussian
    profile at the claim and over a grid of epsilons; the method actually used is named."""
    check = check_classic_calibration(epsilon, delta)
    threshold = classic_failure_threshold(delta)
    grid = [check_classic_calibration(e, delta).to_dict() for e in CALIBRATION_GRID]
    ratio = check.true_delta / delta
    at_claim = (
        f"At the claimed epsilon = {_g(epsilon)} the classic sigma = {check.noise_multiplier:.4g} "
        f"really gives delta = {check.true_delta:.3g}, "
        + (
            f"{ratio:.3g} times the claimed {delta:.3g}: the classic calibration does NOT give the claim."
            if check.violated
            else f"within the claimed {delta:.3g}."
        )
    )
    fails = (
        "it stops meeting its delta from epsilon = " + f"{threshold:.3g}"
        if threshold is not None
        else "it meets its delta for every epsilon up to 100"
    )
    text = (
        f"The classic calibration sigma = sqrt(2 ln(1.25/delta))/epsilon is proven only for epsilon < 1; "
        f"checked against the exact Gaussian privacy profile at delta = {delta:.3g}, {fails}. {at_claim} "
        f"The analytic calibration needs sigma = {check.analytic_noise_multiplier:.4g}. "
        f"This target uses the {method} calibration."
    )
    return {
        "method": method,
        "claim_check": check.to_dict(),
        "failure_threshold": threshold,
        "grid": grid,
        "text": text,
    }


def findings(
    claim: dict, accounting: dict, calibration: dict | None, units: int | None, unit_name: str
) -> list[dict]:
    """Computed findings for one target (see the module docstring)."""
    out = []
    eps, delta = claim["epsilon"], claim["delta"]
    rows = accounting.get("rows", []) if accounting.get("available", True) is not False else []
    upper = best_upper_bound(rows)
    if upper is not None and upper["epsilon"] <= eps * (1 + 1e-9):
        out.append(
            {
                "id": "claim-holds",
                "severity": "info",
                "values": {"upper_bound": upper["epsilon"]},
                "text": f"The claim holds for its stated delta = {delta:.3g}: the {upper['source']} gives "
                f"epsilon = {upper['epsilon']:.4g} <= {eps:.4g} under {claim['neighbouring']} "
                f"neighbours.",
            }
        )
    elif upper is not None:
        out.append(
            {
                "id": "claim-not-confirmed",
                "severity": "high",
                "values": {"upper_bound": upper["epsilon"]},
                "text": f"No accountant confirms the claim: the tightest upper bound is epsilon = "
                f"{upper['epsilon']:.4g} ({upper['source']}) > claimed {eps:.4g} at delta = "
                f"{delta:.3g}.",
            }
        )
    if units:
        per_unit = delta * units
        leak = -math.expm1(units * math.log1p(-delta))
        if per_unit >= 0.05:
            out.append(
                {
                    "id": "large-delta",
                    "severity": "high" if per_unit >= 0.5 else "low",
                    "values": {"delta_times_units": per_unit, "leak_probability": leak, "units": units},
                    "text": f"delta = {delta:.3g} is large for {units} {unit_name}: delta = "
                    f"{per_unit:.2g}/N. A mechanism that publishes each {unit_name.rstrip('s')}'s "
                    f"data with probability delta is (0, delta)-DP, yet exposes at least one of "
                    f"them with probability 1 - (1 - delta)^N = {leak:.0%}. The usual requirement "
                    f"is delta << 1/N = {1 / units:.3g}.",
                }
            )
    ref = accounting.get("at_reference_delta") or []
    ok = [r for r in ref if r["status"] == "ok"]
    ref_delta = accounting.get("reference_delta")
    if ok and ref_delta is not None and not math.isclose(ref_delta, delta):
        listing = ", ".join(f"{r['epsilon']:.4g} ({r['accountant']})" for r in ok)
        tight = min(r["epsilon"] for r in ok)
        out.append(
            {
                "id": "reference-delta",
                "severity": "medium" if tight > eps else "info",
                "values": {r["accountant"]: r["epsilon"] for r in ok},
                "text": f"At delta = {ref_delta:.3g} the same configuration spends epsilon = {listing}"
                + (
                    f": more than the claimed {eps:.4g} even by the tightest accountant."
                    if tight > eps
                    else "."
                ),
            }
        )
    other = [
        r
        for r in rows
        if not r["claimed_setting"]
        and r["status"] == "ok"
        and r["neighbouring"] != claim["neighbouring"]
        and r["sampling"] in ("poisson", "none")
    ]
    if other:
        best = min(other, key=lambda r: r["epsilon"])
        out.append(
            {
                "id": "other-relation",
                "severity": "medium" if best["epsilon"] > eps else "info",
                "values": {"epsilon": best["epsilon"]},
                "text": f"Under {best['neighbouring']} neighbours the same mechanism spends at least "
                f"epsilon = {best['epsilon']:.4g} ({best['accountant']}) at delta = {delta:.3g}; the "
                f"claim is stated for {claim['neighbouring']}.",
            }
        )
    theory = [n for n in accounting.get("notes", []) if "theory forbids" in n or "differ" in n]
    for i, note in enumerate(theory):
        out.append({"id": f"accountants-disagree-{i + 1}", "severity": "medium", "text": note})
    if calibration is not None and calibration.get("available", True) is not False:
        check, threshold = calibration["claim_check"], calibration["failure_threshold"]
        where = f"from epsilon = {threshold:.3g}" if threshold is not None else "nowhere below epsilon = 100"
        severity = "high" if (calibration["method"] == "classic" and check["violated"]) else "medium"
        out.append(
            {
                "id": "classic-calibration",
                "severity": severity,
                "values": {"failure_threshold": threshold, "true_delta_at_claim": check["true_delta"]},
                "text": f"The classic Gaussian calibration fails for large epsilon: at delta = "
                f"{delta:.3g} it stops giving (epsilon, delta)-DP {where} (exact Gaussian "
                f"profile); at the claimed epsilon = {eps:.4g} its true delta is "
                f"{check['true_delta']:.3g}"
                + (" (the claim is broken)." if check["violated"] else " (still within the claim)."),
            }
        )
    return out


def combine_verdict(
    claim: dict, accounting: dict, analytic: dict | None, probes: list[dict], confidence: float
) -> dict:
    """The target's verdict from its probes' verdicts (Bonferroni over probes) and the analytic check.

    VIOLATION if a probe's rigorous bound exceeds the claim or a tight analytic profile refutes it;
    PASS if at least one probe could have certified the claim (ceiling >= claim) and none did;
    INCONCLUSIVE otherwise.
    """
    rows = accounting.get("rows", []) if accounting.get("available", True) is not False else []
    upper = best_upper_bound(rows)
    run = [p for p in probes if p.get("available") and p.get("verdict")]
    rigorous = [(b, p) for p in run for b in p["bounds"] if b["rigorous"]]
    lower = None
    if rigorous:
        b, p = max(rigorous, key=lambda bp: bp[0]["epsilon"])
        lower = {"epsilon": b["epsilon"], "source": f"{b['method']} on probe {p['name']}"}
    p_values = [p["verdict"].get("p_value") for p in run if p["verdict"].get("p_value") is not None]
    p_value = min(1.0, len(run) * min(p_values)) if p_values else None
    ceilings = [p["verdict"].get("ceiling") for p in run if p["verdict"].get("ceiling") is not None]
    ceiling = max(ceilings) if ceilings else None
    statuses = [p["verdict"]["status"] for p in run]
    if "VIOLATION" in statuses:
        status, reason = (
            "VIOLATION",
            (
                f"a rigorous lower bound ({lower['epsilon']:.4g}, {lower['source']}) exceeds "
                f"the claimed epsilon = {claim['epsilon']:.4g} at confidence "
                f"{confidence:.3g} (Bonferroni over {len(run)} probes)"
            ),
        )
    elif analytic and analytic["status"] == "refuted":
        status, reason = "VIOLATION", analytic["text"]
    elif "PASS" in statuses:
        status, reason = (
            "PASS",
            (
                f"no evidence against the claim; the probes could have certified up to "
                f"epsilon = {ceiling:.4g} >= {claim['epsilon']:.4g}"
            ),
        )
    elif not run:
        status, reason = "INCONCLUSIVE", "no probe could be run"
    else:
        status, reason = (
            "INCONCLUSIVE",
            (
                f"no violation found, but with these trials no attack could certify "
                f"more than epsilon = {ceiling:.4g} < claimed {claim['epsilon']:.4g}"
                if ceiling is not None
                else "the probes could not decide"
            ),
        )
    if status != "VIOLATION" and analytic and analytic["status"] == "holds":
        reason += f"; {analytic['text']}"
    gap = None if upper is None or lower is None else max(0.0, upper["epsilon"] - lower["epsilon"])
    return {
        "status": status,
        "p_value": p_value,
        "reason": reason,
        "ceiling": ceiling,
        "upper_bound": upper,
        "lower_bound": lower,
        "gap": gap,
        "analytic": analytic,
        "empirical": {
            "probes": len(run),
            "statuses": statuses,
            "confidence": confidence,
            "multiplicity": "Bonferroni over probes",
        },
    }


def analytic_check(claim: dict, accounting: dict) -> dict | None:
    """Refute or confirm the claim from the accountants alone. Only the closed-form ``exact`` value is
    tight, so only it can refute; any accountant (all are upper bounds) can confirm."""
    if accounting.get("available", True) is False:
        return None
    rows = [r for r in accounting["rows"] if r["claimed_setting"] and r["status"] == "ok"]
    exact = next((r for r in rows if r["accountant"] == "exact"), None)
    eps = claim["epsilon"]
    if exact is not None and exact["epsilon"] > eps * (1 + 1e-6):
        return {
            "status": "refuted",
            "epsilon": exact["epsilon"],
            "text": f"the exact (tight) privacy profile gives epsilon = {exact['epsilon']:.4g} > claimed "
            f"{eps:.4g} at delta = {claim['delta']:.3g}: the claim is false for this mechanism",
        }
    upper = best_upper_bound(accounting["rows"])
    if upper is not None and upper["epsilon"] <= eps * (1 + 1e-9):
        return {
            "status": "holds",
            "epsilon": upper["epsilon"],
            "text": f"the accountants prove the claim ({upper['source']}: epsilon = {upper['epsilon']:.4g} "
            f"<= {eps:.4g})",
        }
    return {
        "status": "unconfirmed",
        "epsilon": None if upper is None else upper["epsilon"],
        "text": "no accountant proves the claim and none refutes it",
    }
