"""A target's two verdicts and the one table that combines them.

Analytic (from the accountants):

- PROVED: a valid upper bound (any accountant's epsilon in the claimed setting) is at most the claim;
- REFUTED: a tight accountant (``exact``, the closed-form Gaussian profile; or an infinite epsilon from
  a tight accountant, which a non-private configuration gets) exceeds the claim;
- UNDETERMINED otherwise.

Empirical (from the probes that ran; each probe at the audit's confidence split over the probes):

- VIOLATION: a rigorous lower bound exceeds the claim (the probe's p-value is below its level);
- PASS: no violation, and at least one probe's estimator could have certified the claim;
- INCONCLUSIVE: no violation, and every ceiling of the estimator used is below the claim (or no probe ran).

``VERDICT_TABLE`` combines them. A failed probe (an error, a killed worker) never lets a target pass on
its strength: the target is INCONCLUSIVE unless it is a VIOLATION (``FAILED_PROBE_RULE``).
"""

from __future__ import annotations

import math

from reports.audit.model import (
    AccountingSection,
    Analytic,
    AnalyticResult,
    Bound,
    Claim,
    Empirical,
    EmpiricalResult,
    ProbeSection,
    Status,
    Unavailable,
)

TIGHT_ACCOUNTANTS = ("exact", "pld", "prv")
RELATIVE_TOLERANCE = 1e-9

# (analytic, empirical) -> (overall, rule id); the README shows this table.
VERDICT_TABLE: dict[tuple[Analytic, Empirical], tuple[Status, str]] = {
    (Analytic.PROVED, Empirical.VIOLATION): (Status.VIOLATION, "implementation-bug"),
    (Analytic.PROVED, Empirical.PASS): (Status.PASS, "proved"),
    (Analytic.PROVED, Empirical.INCONCLUSIVE): (Status.PASS, "proved"),
    (Analytic.REFUTED, Empirical.VIOLATION): (Status.VIOLATION, "refuted-and-violated"),
    (Analytic.REFUTED, Empirical.PASS): (Status.VIOLATION, "refuted"),
    (Analytic.REFUTED, Empirical.INCONCLUSIVE): (Status.VIOLATION, "refuted"),
    (Analytic.UNDETERMINED, Empirical.VIOLATION): (Status.VIOLATION, "violated"),
    (Analytic.UNDETERMINED, Empirical.PASS): (Status.PASS, "consistent"),
    (Analytic.UNDETERMINED, Empirical.INCONCLUSIVE): (Status.INCONCLUSIVE, "untestable"),
}
FAILED_PROBE_RULE = "probe-failed"
CRITICAL_FINDING_RULE = "critical-finding"
UNTESTED_RULE = "untested-implementation"


def analytic_verdict(claim: Claim, accounting: AccountingSection | Unavailable) -> AnalyticResult:
    """PROVED, REFUTED or UNDETERMINED from the accountants' rows of the claimed setting."""
    if isinstance(accounting, Unavailable):
        return AnalyticResult(Analytic.UNDETERMINED, None, None)
    rows = accounting.claimed_rows()
    refuting = [r for r in rows if r.accountant == "exact" and r.epsilon > claim.epsilon * (1 + 1e-6)]
    refuting += [r for r in rows if r.accountant in TIGHT_ACCOUNTANTS and math.isinf(r.epsilon)]
    if refuting:
        row = max(refuting, key=lambda r: r.epsilon)
        return AnalyticResult(Analytic.REFUTED, row.epsilon, row.accountant)
    upper = accounting.best_upper_bound()
    if upper is not None and upper.epsilon <= claim.epsilon * (1 + RELATIVE_TOLERANCE):
        return AnalyticResult(Analytic.PROVED, upper.epsilon, upper.source)
    return AnalyticResult(
        Analytic.UNDETERMINED, None if upper is None else upper.epsilon, None if upper is None else upper.source
    )


def _best_lower_bound(ran: list[ProbeSection]) -> Bound | None:
    best = None
    for probe in ran:
        bound = probe.best_rigorous()
        if bound is not None and (best is None or bound["epsilon"] > best.epsilon):
            best = Bound(float(bound["epsilon"]), f"{bound['method']} on probe {probe.name}")
    return best


def empirical_verdict(claim: Claim, probes: tuple[ProbeSection, ...], confidence: float) -> EmpiricalResult:
    """VIOLATION, PASS or INCONCLUSIVE from the probes that ran."""
    ran = [p for p in probes if p.outcome == "ran"]
    ceilings = [p.ceiling for p in ran if p.ceiling is not None]
    p_values = [p.p_value for p in ran if p.p_value is not None]
    if any(p.status == "VIOLATION" for p in ran):
        status = Empirical.VIOLATION
    elif any(c >= claim.epsilon for c in ceilings):
        status = Empirical.PASS
    else:
        status = Empirical.INCONCLUSIVE
    return EmpiricalResult(
        status=status,
        lower_bound=_best_lower_bound(ran),
        ceiling=max(ceilings) if ceilings else None,
        probes_run=len(ran),
        failed=tuple(p.name for p in probes if p.outcome == "failed"),
        declined=tuple(p.name for p in probes if p.outcome == "declined"),
        confidence=confidence,
        p_value=min(1.0, len(p_values) * min(p_values)) if p_values else None,
    )


def combine(analytic: AnalyticResult, empirical: EmpiricalResult) -> tuple[Status, str]:
    """The overall verdict of a target and the rule that decided it (``VERDICT_TABLE``)."""
    status, rule = VERDICT_TABLE[(analytic.status, empirical.status)]
    if empirical.failed and status is not Status.VIOLATION:
        return Status.INCONCLUSIVE, FAILED_PROBE_RULE
    return status, rule


def with_critical_findings(verdict, findings):
    """A target with a critical finding of its own checks (e.g. a Flower transcript showing less noise than
    accounted) is a VIOLATION whatever the table says (rule ``critical-finding``)."""
    import dataclasses

    if verdict.status is Status.VIOLATION or not any(f.severity == "critical" for f in findings):
        return verdict
    return dataclasses.replace(verdict, status=Status.VIOLATION, rule=CRITICAL_FINDING_RULE)


def with_untested_implementation(verdict):
    """A target that runs the user's implementation and opted out of every probe (``probes = []``) with no check
    of its own measuring the run: a PASS becomes INCONCLUSIVE (rule ``untested-implementation``): the accounting
    holds for the description, nobody tested the code."""
    import dataclasses

    if verdict.status is not Status.PASS:
        return verdict
    return dataclasses.replace(verdict, status=Status.INCONCLUSIVE, rule=UNTESTED_RULE)


def worst_status(statuses) -> Status:
    """VIOLATION beats INCONCLUSIVE beats PASS; no target at all is INCONCLUSIVE."""
    statuses = [Status(s) for s in statuses]
    if Status.VIOLATION in statuses:
        return Status.VIOLATION
    if not statuses or Status.INCONCLUSIVE in statuses:
        return Status.INCONCLUSIVE
    return Status.PASS
