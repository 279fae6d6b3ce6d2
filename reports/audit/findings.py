"""Findings of one target, each computed by its own rule from the target's numbers (never hard-coded),
and the calibration-check section. Findings carry an id, a severity and values; the renderers word them.

Rules (in the order a report lists them, most important first): ``implementation-bug`` (the accountants
prove the claim, yet a probe violates it), ``claim-refuted``, ``probe-failed``, ``claim-holds`` /
``claim-not-confirmed``, ``large-delta``, ``reference-delta``, ``other-relation``,
``accountants-disagree``, ``classic-calibration``, ``probe-declined``.
"""

from __future__ import annotations

import math

from accounting.calibration import check_classic_calibration, classic_failure_threshold
from reports.audit.model import (
    AccountingSection,
    Analytic,
    CalibrationSection,
    Empirical,
    Finding,
    TargetVerdict,
    Unavailable,
)

CALIBRATION_GRID = (0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 16.0, 20.0)
SEVERITY_ORDER = ("critical", "high", "medium", "low", "info")


def calibration_section(epsilon: float, delta: float, method: str) -> CalibrationSection:
    """The classic formula sigma = sqrt(2 ln(1.25/delta))/epsilon against the exact Gaussian profile, at
    the claim and over a grid of epsilons; ``method`` is the calibration the target uses."""
    grid = tuple(check_classic_calibration(e, delta).to_dict() for e in CALIBRATION_GRID)
    return CalibrationSection(
        method,
        float(epsilon),
        float(delta),
        check_classic_calibration(epsilon, delta).to_dict(),
        classic_failure_threshold(delta),
        grid,
    )


def implementation_bug(verdict: TargetVerdict) -> list[Finding]:
    if verdict.analytic.status is Analytic.PROVED and verdict.empirical.status is Empirical.VIOLATION:
        lower = verdict.empirical.lower_bound
        return [
            Finding(
                "implementation-bug",
                "critical",
                {
                    "upper_bound": verdict.analytic.epsilon,
                    "accountant": verdict.analytic.accountant,
                    "lower_bound": None if lower is None else lower.epsilon,
                    "lower_source": None if lower is None else lower.source,
                },
            )
        ]
    return []


def claim_refuted(verdict: TargetVerdict) -> list[Finding]:
    if verdict.analytic.status is Analytic.REFUTED:
        return [
            Finding(
                "claim-refuted",
                "high",
                {"epsilon": verdict.analytic.epsilon, "accountant": verdict.analytic.accountant},
            )
        ]
    return []


def probe_failed(verdict: TargetVerdict, reasons: dict) -> list[Finding]:
    return [
        Finding("probe-failed", "high", {"probe": name, "reason": reasons.get(name, "")})
        for name in verdict.empirical.failed
    ]


def probe_declined(verdict: TargetVerdict, reasons: dict) -> list[Finding]:
    return [
        Finding("probe-declined", "low", {"probe": name, "reason": reasons.get(name, "")})
        for name in verdict.empirical.declined
    ]


def claim_holds(accounting: AccountingSection, verdict: TargetVerdict, epsilon: float) -> list[Finding]:
    upper = accounting.best_upper_bound()
    if upper is None or verdict.analytic.status is Analytic.REFUTED:
        return []
    holds = upper.epsilon <= epsilon * (1 + 1e-9)
    return [
        Finding(
            "claim-holds" if holds else "claim-not-confirmed",
            "info" if holds else "medium",
            {"upper_bound": upper.epsilon, "accountant": upper.source},
        )
    ]


def large_delta(delta: float, units: int | None, unit_name: str) -> list[Finding]:
    """delta is large for N units when delta * N >= 0.05: one of them leaks with probability 1-(1-delta)^N."""
    if not units or delta * units < 0.05:
        return []
    per_unit = delta * units
    leak = -math.expm1(units * math.log1p(-delta))
    return [
        Finding(
            "large-delta",
            "high" if per_unit >= 0.5 else "low",
            {
                "delta": delta,
                "delta_times_units": per_unit,
                "leak_probability": leak,
                "units": units,
                "unit_name": unit_name,
            },
        )
    ]


def reference_delta(accounting: AccountingSection, delta: float, epsilon: float) -> list[Finding]:
    ok = [r for r in accounting.at_reference_delta if r.status == "ok"]
    if not ok or math.isclose(accounting.reference_delta, delta):
        return []
    tight = min(r.epsilon for r in ok)
    return [
        Finding(
            "reference-delta",
            "medium" if tight > epsilon else "info",
            {
                "reference_delta": accounting.reference_delta,
                "tightest": tight,
                "claim_epsilon": epsilon,
                "epsilons": {r.accountant: r.epsilon for r in ok},
            },
        )
    ]


def other_relation(accounting: AccountingSection, neighbouring: str, epsilon: float) -> list[Finding]:
    other = [
        r
        for r in accounting.rows
        if not r.claimed_setting
        and r.status == "ok"
        and r.neighbouring != neighbouring
        and r.sampling in ("poisson", "none")
    ]
    if not other:
        return []
    best = min(other, key=lambda r: r.epsilon)
    return [
        Finding(
            "other-relation",
            "info",  # the claim is stated, and accounted, under its own relation: the other one is information
            {
                "epsilon": best.epsilon,
                "accountant": best.accountant,
                "neighbouring": best.neighbouring,
                "claimed_neighbouring": neighbouring,
                "delta": best.delta,
            },
        )
    ]


def accountants_disagree(accounting: AccountingSection) -> list[Finding]:
    notes = [n for n in accounting.notes if "theory forbids" in n or "differ" in n]
    return [Finding("accountants-disagree", "medium", {"note": n}) for n in notes]


def classic_calibration(calibration: CalibrationSection | Unavailable | None) -> list[Finding]:
    """How the classic Gaussian calibration fares here; high only when this target uses it and it fails."""
    if calibration is None or isinstance(calibration, Unavailable):
        return []
    violated = bool(calibration.claim_check["violated"])
    uses_classic = calibration.method == "classic"
    severity = "high" if (uses_classic and violated) else "info"
    return [
        Finding(
            "classic-calibration",
            severity,
            {
                "method": calibration.method,
                "failure_threshold": calibration.failure_threshold,
                "true_delta_at_claim": calibration.claim_check["true_delta"],
                "violated_at_claim": violated,
                "delta": calibration.delta,
                "epsilon": calibration.epsilon,
            },
        )
    ]


def all_findings(target, accounting, calibration, verdict: TargetVerdict, probes) -> tuple[Finding, ...]:
    """Every rule's findings for one target, most severe first (stable within a severity)."""
    claim = target.claim
    reasons = {p.name: p.reason for p in probes}
    out = implementation_bug(verdict) + claim_refuted(verdict) + probe_failed(verdict, reasons)
    if not isinstance(accounting, Unavailable):
        out += claim_holds(accounting, verdict, claim.epsilon)
    out += large_delta(claim.delta, *target.units())
    if not isinstance(accounting, Unavailable):
        out += reference_delta(accounting, claim.delta, claim.epsilon)
        out += other_relation(accounting, claim.neighbouring, claim.epsilon)
        out += accountants_disagree(accounting)
    out += classic_calibration(calibration) + probe_declined(verdict, reasons)
    own = list(target.findings(verdict, probes))
    if any(f.severity == "critical" for f in own):  # the target's own check refutes: "not confirmed" would contradict
        out = [f for f in out if f.id != "claim-not-confirmed"]
    out += own
    return tuple(sorted(out, key=lambda f: SEVERITY_ORDER.index(f.severity)))
