"""The verdict table: every combination of analytic and empirical verdicts, the rules that produce each
verdict from accountant rows and probe sections, and a planted implementation bug (PROVED + VIOLATION).
The expected table is written out here from the specification (issue 10), not read from the code."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from reports.audit.model import (
    AccountantRow,
    AccountingSection,
    Analytic,
    AnalyticResult,
    Claim,
    Empirical,
    EmpiricalResult,
    ProbeSection,
    Status,
)
from reports.audit.verdicts import FAILED_PROBE_RULE, analytic_verdict, combine, empirical_verdict, worst_status

ROOT = Path(__file__).resolve().parents[3]
CLAIM = Claim(1.0, 1e-5, "add-remove", "one record")
EXPECTED = {  # issue 10: a proved claim passes unless a probe violates it; a refuted one never passes
    ("PROVED", "VIOLATION"): ("VIOLATION", "implementation-bug"),
    ("PROVED", "PASS"): ("PASS", "proved"),
    ("PROVED", "INCONCLUSIVE"): ("PASS", "proved"),
    ("REFUTED", "VIOLATION"): ("VIOLATION", None),
    ("REFUTED", "PASS"): ("VIOLATION", None),
    ("REFUTED", "INCONCLUSIVE"): ("VIOLATION", None),
    ("UNDETERMINED", "VIOLATION"): ("VIOLATION", None),
    ("UNDETERMINED", "PASS"): ("PASS", None),
    ("UNDETERMINED", "INCONCLUSIVE"): ("INCONCLUSIVE", None),
}


def _empirical(status: Empirical, failed=()) -> EmpiricalResult:
    return EmpiricalResult(status, None, 5.0, 1, tuple(failed), (), 0.95, None)


@pytest.mark.parametrize("analytic, empirical", list(itertools.product(Analytic, Empirical)))
def test_every_combination_of_the_table(analytic, empirical):
    status, rule = combine(AnalyticResult(analytic, 1.0, "exact"), _empirical(empirical))
    expected_status, expected_rule = EXPECTED[(analytic.value, empirical.value)]
    assert status.value == expected_status
    if expected_rule:
        assert rule == expected_rule


@pytest.mark.parametrize("analytic, empirical", list(itertools.product(Analytic, Empirical)))
def test_a_failed_probe_never_lets_a_target_pass(analytic, empirical):
    status, rule = combine(AnalyticResult(analytic, 1.0, "exact"), _empirical(empirical, failed=("p",)))
    if EXPECTED[(analytic.value, empirical.value)][0] == "VIOLATION":
        assert status is Status.VIOLATION
    else:
        assert status is Status.INCONCLUSIVE and rule == FAILED_PROBE_RULE


def _accounting(*rows) -> AccountingSection:
    rows = tuple(AccountantRow(name, "add-remove", "none", 1e-5, eps, "ok", "", True) for name, eps in rows)
    return AccountingSection("m", 1, rows, (), 1e-5, (), ())


def test_analytic_verdict_rules():
    assert analytic_verdict(CLAIM, _accounting(("rdp", 1.2), ("pld", 0.9))).status is Analytic.PROVED
    assert analytic_verdict(CLAIM, _accounting(("rdp", 1.2), ("exact", 1.1))).status is Analytic.REFUTED
    # a loose accountant above the claim refutes nothing
    assert analytic_verdict(CLAIM, _accounting(("rdp", 1.2), ("moments", 3.0))).status is Analytic.UNDETERMINED
    # an infinite epsilon from a tight accountant (a non-private configuration) refutes
    result = analytic_verdict(CLAIM, _accounting(("pld", float("inf")), ("rdp", float("inf"))))
    assert result.status is Analytic.REFUTED and result.epsilon == float("inf")


def _probe(status, ceiling, epsilon=0.5, p_value=0.5, outcome="ran") -> ProbeSection:
    bound = {"method": "clopper-pearson", "epsilon": epsilon, "delta": 1e-5, "confidence": 0.975, "rigorous": True}
    return ProbeSection("p", "mechanism", outcome, bounds=(bound,), status=status, p_value=p_value, ceiling=ceiling)


def test_empirical_verdict_rules():
    assert empirical_verdict(CLAIM, (_probe("PASS", 5.0),), 0.975).status is Empirical.PASS
    # the ceiling of the estimator used decides testability, not the probe's own word
    assert empirical_verdict(CLAIM, (_probe("PASS", 0.8),), 0.975).status is Empirical.INCONCLUSIVE
    both = empirical_verdict(CLAIM, (_probe("PASS", 5.0), _probe("VIOLATION", 5.0, 2.0, 0.01)), 0.975)
    assert both.status is Empirical.VIOLATION and both.p_value == pytest.approx(0.02)  # Bonferroni over 2
    assert both.lower_bound.epsilon == 2.0
    failed = empirical_verdict(CLAIM, (ProbeSection("q", "mechanism", "failed", "killed"),), 0.95)
    assert failed.status is Empirical.INCONCLUSIVE and failed.failed == ("q",) and failed.probes_run == 0


def test_worst_status():
    assert worst_status(["PASS", "INCONCLUSIVE", "VIOLATION"]) is Status.VIOLATION
    assert worst_status(["PASS", "PASS"]) is Status.PASS and worst_status([]) is Status.INCONCLUSIVE


def test_planted_implementation_bug_is_proved_and_violated(tmp_path):
    """The planted-bug example: the analytic calibration proves (2, 1e-5), the implementation adds a tenth
    of the noise. With 20000 trials the rigorous bound exceeds 2 (true epsilon ~ 40; the estimator's
    ceiling is about 6.7), so a false failure needs a Clopper-Pearson failure at level 0.05."""
    from reports.cli import main
    from reports.model import load_report

    code = main(
        [
            "audit",
            str(ROOT / "configs" / "audit_planted_bug.toml"),
            "--out",
            str(tmp_path),
            "--quiet",
            "--trials",
            "20000",
        ]
    )
    target = load_report(tmp_path / "report.json")["targets"][0]
    assert code == 1 and target["verdict"]["rule"] == "implementation-bug"
    assert (
        target["verdict"]["analytic"]["status"] == "PROVED" and target["verdict"]["empirical"]["status"] == "VIOLATION"
    )
    assert target["findings"][0]["id"] == "implementation-bug" and target["findings"][0]["severity"] == "critical"
