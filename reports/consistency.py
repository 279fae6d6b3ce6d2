"""Consistency of a report beyond its schema: the overall status is the worst target verdict, the exit
code is that status's, each target's two verdicts and its bounds follow from its own claim, accounting rows
and probes (``reports.audit.verdicts``, as the audit computed them: an edited epsilon cannot keep a stale
verdict; nor an edited upper bound, nor a probe status its own p-value, ceiling or bound contradicts, nor
a claim delta other than the accounting rows'), each target's verdict follows the verdict table from its
two verdicts (or is a VIOLATION by rule ``critical-finding`` with a critical finding of its own), the findings
tally counts the targets' findings, the gap is upper - lower bound (2.1), and every curve's arrays have
equal lengths. ``dpaudit report`` refuses a hand-edited report that breaks any of these, in one line
naming the path."""

from __future__ import annotations

import math

from accounting.errors import ConfigurationError


def _curve(path: str, curve) -> None:
    if isinstance(curve, dict) and "x" in curve and "y" in curve and len(curve["x"]) != len(curve["y"]):
        raise ConfigurationError(path, f"x has {len(curve['x'])} values but y has {len(curve['y'])}")


def _target_curves(path: str, target: dict) -> None:
    for j, probe in enumerate(target.get("probes", [])):
        _curve(f"{path}/probes/{j}/roc", probe.get("roc"))
        _curve(f"{path}/probes/{j}/tradeoff", probe.get("tradeoff"))
    for j, series in enumerate((target.get("accounting") or {}).get("over_rounds", []) or []):
        _curve(f"{path}/accounting/over_rounds/{j}", series)
    utility = target.get("utility") or {}
    if utility.get("available", True) is not False:
        for key in ("values", "stderr", "epsilon_spent"):
            if len(utility.get(key, [])) != len(utility.get("rounds", [])):
                raise ConfigurationError(f"{path}/utility/{key}", "length differs from utility/rounds")


def _target_verdict(path: str, target: dict) -> None:
    from reports.audit.model import Analytic, Empirical, Status
    from reports.audit.verdicts import CRITICAL_FINDING_RULE, FAILED_PROBE_RULE, UNTESTED_RULE, VERDICT_TABLE

    verdict = target["verdict"]
    if verdict.get("rule") == CRITICAL_FINDING_RULE:  # the target's own checks found a critical problem
        if verdict["status"] != Status.VIOLATION.value or not any(
                f.get("severity") == "critical" for f in target.get("findings", [])):
            raise ConfigurationError(f"{path}/verdict/rule", f"{CRITICAL_FINDING_RULE!r} needs status VIOLATION and a "
                                                             "critical finding of the target")
        return
    expected, _ = VERDICT_TABLE[(Analytic(verdict["analytic"]["status"]), Empirical(verdict["empirical"]["status"]))]
    if verdict["empirical"]["failed"] and expected is not Status.VIOLATION:
        expected = Status.INCONCLUSIVE
    if verdict.get("rule") == UNTESTED_RULE and expected is Status.PASS:  # a PASS nobody tested the code of
        expected = Status.INCONCLUSIVE
    if verdict["status"] != expected.value:
        raise ConfigurationError(
            f"{path}/verdict/status",
            f"{verdict['status']} does not follow from the "
            f"analytic and empirical verdicts (the verdict table gives {expected.value}; "
            f"rule {verdict.get('rule', FAILED_PROBE_RULE)!r})",
        )


def _verdicts_from_numbers(path: str, target: dict) -> None:
    """The analytic and empirical verdicts and the bounds a target shows are the ones its claim, accounting
    rows and probes give."""
    from reports.audit.model import AccountingSection, Claim, ProbeSection, Unavailable, from_plain
    from reports.audit.verdicts import analytic_verdict, empirical_verdict

    verdict = target["verdict"]
    claim = from_plain(Claim, target["claim"])
    accounting = from_plain(AccountingSection | Unavailable, target["accounting"])
    analytic = analytic_verdict(claim, accounting)
    probes = tuple(from_plain(ProbeSection, p) for p in target.get("probes", []))
    empirical = empirical_verdict(claim, probes, float(verdict["empirical"]["confidence"]))
    lower = verdict["empirical"].get("lower_bound")
    upper = None if isinstance(accounting, Unavailable) else accounting.best_upper_bound()
    shown_upper = verdict.get("upper_bound")
    for where, shown, computed in (
        ("analytic/status", verdict["analytic"]["status"], analytic.status.value),
        ("analytic/epsilon", verdict["analytic"].get("epsilon"), analytic.epsilon),
        ("empirical/status", verdict["empirical"]["status"], empirical.status.value),
        ("empirical/lower_bound", lower and lower["epsilon"], empirical.lower_bound and empirical.lower_bound.epsilon),
        ("upper_bound", shown_upper and shown_upper["epsilon"], upper and upper.epsilon),
    ):
        if not _same(shown, computed):
            raise ConfigurationError(
                f"{path}/verdict/{where}", f"{shown} but the target's claim, accounting and probes give {computed}"
            )


def _claimed_delta(path: str, target: dict) -> None:
    """The accountants' rows of the claimed setting are at the claim's delta (an edited claim.delta kept
    the verdict proved at another delta)."""
    claim_delta = target["claim"]["delta"]
    for j, row in enumerate((target.get("accounting") or {}).get("rows", []) or []):
        if row.get("claimed_setting") and not math.isclose(float(row["delta"]), float(claim_delta), rel_tol=1e-9):
            raise ConfigurationError(
                f"{path}/accounting/rows/{j}/delta", f"{row['delta']} but the claim's delta is {claim_delta}"
            )


def _probe_statuses(path: str, target: dict) -> None:
    """Each probe's status follows from its own numbers as ``attacks.verdict.decide`` gives it: VIOLATION
    exactly when its p-value is at most 1 - confidence (with a single Clopper-Pearson bound, exactly when
    that bound exceeds the claim); otherwise INCONCLUSIVE exactly when its ceiling is at most the claim."""
    claim = float(target["claim"]["epsilon"])
    for j, probe in enumerate(target.get("probes", [])):
        status = probe.get("status")
        if probe.get("outcome") != "ran" or status is None:
            continue
        violation, p_value, ceiling = status == "VIOLATION", probe.get("p_value"), probe.get("ceiling")
        rigorous = [b for b in probe.get("bounds", []) if b.get("rigorous")]
        problem = None
        if p_value is not None and (float(p_value) <= 1.0 - float(probe["confidence"])) != violation:
            problem = f"its p-value {p_value} at confidence {probe['confidence']}"
        elif len(rigorous) == 1 and str(rigorous[0].get("method")).startswith("clopper-pearson") and (
            float(rigorous[0]["delta"]) >= float(target["claim"]["delta"]) * (1 - 1e-12)
        ):
            bound = float(rigorous[0]["epsilon"])
            if (violation and bound < claim * (1 - 1e-6)) or (not violation and bound > claim * (1 + 1e-6)):
                problem = f"its rigorous bound {bound:.6g} against the claim {claim:g}"
        if problem is None and not violation and ceiling is not None:
            if (float(ceiling) <= claim) != (status == "INCONCLUSIVE"):
                problem = f"its ceiling {float(ceiling):.6g} against the claim {claim:g}"
        if problem is not None:
            raise ConfigurationError(f"{path}/probes/{j}/status", f"{status} does not follow from {problem}")


def _same(shown, computed) -> bool:
    if isinstance(computed, str) or shown is None or computed is None:
        return shown == computed
    shown = float(shown)  # the report writes infinities as "inf"
    return shown == computed or math.isclose(shown, computed, rel_tol=1e-12)


def _findings_tally(report: dict) -> None:
    """The top-level findings tally (schema 2.1; absent in 2.0 reports) must be the targets' own."""
    from reports.findings_tally import findings_tally

    if "findings" not in report:
        return
    expected = findings_tally(report["targets"])
    for key in ("count", "worst", "by_severity"):
        if report["findings"][key] != expected[key]:
            raise ConfigurationError(
                f"findings/{key}", f"{report['findings'][key]} but the targets' findings give {expected[key]}"
            )


def _gap(path: str, verdict: dict) -> None:
    """Since schema 2.1 the gap is exactly upper - lower, negative when the two contradict (2.0 clipped
    it at 0, which hid a lower bound above the upper bound)."""
    import math

    upper, lower, gap = verdict.get("upper_bound"), verdict["empirical"].get("lower_bound"), verdict.get("gap")
    if not upper or not lower or gap is None:
        return
    expected = float(upper["epsilon"]) - float(lower["epsilon"])
    if not math.isclose(float(gap), expected, rel_tol=1e-9, abs_tol=1e-12) and not (
        math.isinf(expected) and float(gap) == expected
    ):
        raise ConfigurationError(f"{path}/verdict/gap", f"{gap} but upper - lower bound = {expected:.6g}")


def check_consistency(report: dict) -> None:
    """Raise ConfigurationError (path and reason, one line) if ``report`` contradicts itself."""
    from reports.audit.verdicts import worst_status
    from reports.exit_codes import exit_code_for_status

    for i, target in enumerate(report["targets"]):
        _target_verdict(f"targets/{i}", target)
        if report.get("schema_version") != "2.0":
            _gap(f"targets/{i}", target["verdict"])
        _claimed_delta(f"targets/{i}", target)
        _probe_statuses(f"targets/{i}", target)
        _verdicts_from_numbers(f"targets/{i}", target)
        _target_curves(f"targets/{i}", target)
    _findings_tally(report)
    worst = worst_status(t["verdict"]["status"] for t in report["targets"]).value
    if report["status"] != worst:
        raise ConfigurationError("status", f"{report['status']} but the targets' verdicts give {worst}")
    if report["exit_code"] != int(exit_code_for_status(worst)):
        raise ConfigurationError(
            "exit_code",
            f"{report['exit_code']} does not match status {worst} (exit code {int(exit_code_for_status(worst))})",
        )
