"""The audit's sections: accounting, findings, calibration check, trade-off curve and the resumable section
cache. Reference values come from the DP-FTS-DE paper's published numbers and the notes' independent
computations (seed_dpftsde.md 4.4-4.7, seed_fedpne.md 3.3), or from closed forms evaluated with scipy here;
none from the code under test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from accounting.mechanisms import Composition, Gaussian
from reports.audit import accounting as acc
from reports.audit import findings as rules
from reports.audit.cache import SectionCache
from reports.audit.model import Claim, PlannerSection, TargetSpec, Unavailable
from reports.audit.targets import build_target
from reports.audit.verdicts import analytic_verdict

DELTA_29 = 29.0**-1.1
FTS_CLAIM = Claim(15.17, DELTA_29, "add-remove", "one agent")


def _fts(claim=FTS_CLAIM):
    return build_target(
        TargetSpec(
            "fts", "dp-fts-de", claim, parameters={"rate": 0.35, "noise_multiplier": 1.0, "rounds": 60, "clip": 22.0}
        )
    )


@pytest.fixture(scope="module")
def fts_accounting():
    return acc.accounting_section(_fts(), ["moments", "pld"], rounds_names=("pld",), rounds_points=3)


def _eps(rows, accountant, neighbouring="add-remove", sampling="poisson"):
    return next(
        r.epsilon for r in rows if (r.accountant, r.neighbouring, r.sampling) == (accountant, neighbouring, sampling)
    )


def test_accounting_reproduces_published_and_reference_numbers(fts_accounting):
    rows = fts_accounting.rows
    # paper (Fig. 3a / notebook): 15.17; notes 4.5: PLD 10.38, replace-one PLD 21.39 (at delta = 29^-1.1)
    assert _eps(rows, "moments") == pytest.approx(15.17, abs=0.01)
    assert _eps(rows, "pld") == pytest.approx(10.38, abs=0.03)
    assert _eps(rows, "pld", "replace-one") == pytest.approx(21.39, abs=0.05)
    # notes 4.5 at delta = 1e-5: paper recipe 22.97, PLD 19.74
    ref = {r.accountant: r.epsilon for r in fts_accounting.at_reference_delta}
    assert ref["moments"] == pytest.approx(22.97, abs=0.01) and ref["pld"] == pytest.approx(19.74, abs=0.05)
    combos = {(r.neighbouring, r.sampling) for r in rows}
    assert combos == {(n, s) for n in ("add-remove", "replace-one") for s in ("poisson", "fixed-size")}
    assert all(r.reason for r in rows if r.status != "ok")
    series = fts_accounting.over_rounds[0]
    assert series.x[-1] == 60 and series.y[-1] == pytest.approx(10.38, abs=0.03)
    assert all(np.diff(series.y) > 0)


def _ids(found):
    return {f.id: f for f in found}


def test_findings_are_computed(fts_accounting):
    target = _fts()
    holds = _ids(rules.claim_holds(fts_accounting, _verdict(fts_accounting), FTS_CLAIM.epsilon))
    assert holds["claim-holds"].values["upper_bound"] == pytest.approx(10.38, abs=0.03)
    large = rules.large_delta(FTS_CLAIM.delta, *target.units())[0]
    # notes 4.7 F1: delta = 0.71/N, 1 - (1 - delta)^29 ~ 51%
    assert large.values["delta_times_units"] == pytest.approx(0.714, abs=0.001)
    assert large.values["leak_probability"] == pytest.approx(1 - (1 - DELTA_29) ** 29) and large.severity == "high"
    reference = rules.reference_delta(fts_accounting, FTS_CLAIM.delta, FTS_CLAIM.epsilon)[0]
    assert reference.values["epsilons"]["moments"] == pytest.approx(22.97, abs=0.01)
    other = rules.other_relation(fts_accounting, "add-remove", FTS_CLAIM.epsilon)[0]
    assert other.values["epsilon"] == pytest.approx(21.39, abs=0.05)
    assert rules.large_delta(1e-7, 29, "agents") == []  # a small delta for 29 units is not flagged


def _verdict(accounting, claim=FTS_CLAIM):
    from reports.audit.model import Empirical, EmpiricalResult, Status, TargetVerdict

    empirical = EmpiricalResult(Empirical.INCONCLUSIVE, None, None, 0, (), (), 0.95, None)
    return TargetVerdict(Status.PASS, "proved", analytic_verdict(claim, accounting), empirical, None, None)


def test_classic_calibration_section_matches_notes():
    section = rules.calibration_section(10.0, 1e-5, "classic")
    # seed_fedpne.md 3.3(a): first failing epsilon 8.42 at delta = 1e-5; true delta(10) = 2.27e-5
    assert section.failure_threshold == pytest.approx(8.42, abs=0.01)
    assert section.claim_check["true_delta"] == pytest.approx(2.27e-5, rel=0.01) and section.claim_check["violated"]
    assert rules.classic_calibration(section)[0].severity == "high"
    # the analytic target carries the same check, but not "the claim is broken"
    analytic = rules.classic_calibration(rules.calibration_section(10.0, 1e-5, "analytic"))[0]
    assert analytic.severity == "info" and analytic.values["method"] == "analytic"


def test_exact_profile_refutes_the_classic_calibration():
    sigma = math.sqrt(2 * math.log(1.25 / 1e-5)) / 10.0  # classic calibration at (10, 1e-5)
    claim = Claim(10.0, 1e-5, "add-remove", "one record")
    target = build_target(
        TargetSpec("g", "mechanism", claim, parameters={"noise_multiplier": sigma}, accountants=("exact", "rdp"))
    )
    section = acc.accounting_section(target, ["exact", "rdp"])
    result = analytic_verdict(claim, section)
    assert result.status.value == "REFUTED" and result.epsilon > 10.0 and result.accountant == "exact"


def test_gaussian_tradeoff_is_the_closed_form_and_the_profile_route_agrees():
    fpr = np.logspace(-6, -0.01, 25)
    mu = 0.5
    expected = stats.norm.cdf(stats.norm.ppf(fpr) + mu)  # GDP trade-off (Dong, Roth, Su 2019)
    assert np.allclose(acc.tradeoff_curve(Gaussian(1 / mu), 1, fpr).y, expected, rtol=1e-9)
    y = np.array(acc.profile_tradeoff(Composition.of(Gaussian(1 / mu), 1), fpr).y)
    assert np.all(y >= expected * (1 - 1e-3))  # the profile route is conservative ...
    assert np.all(y <= expected * 1.05 + 1e-6)  # ... and close for a Gaussian


def test_section_cache_resumes_typed_sections_without_recomputing(tmp_path):
    calls, reused = [], []
    section = PlannerSection(100, 1e-5, 0.95, float("inf"), 3.0, None, "cp")  # infinity survives the JSON
    first = SectionCache(str(tmp_path), 0, reused).get_or_compute(
        "s", {"a": 1}, lambda: calls.append(1) or section, PlannerSection
    )
    again = SectionCache(str(tmp_path), 0, reused).get_or_compute(
        "s", {"a": 1}, lambda: calls.append(1), PlannerSection
    )
    assert first == again == section and len(calls) == 1 and reused == ["target-0/s"]
    other = SectionCache(str(tmp_path), 0, reused).get_or_compute(
        "s", {"a": 2}, lambda: Unavailable("x"), PlannerSection | Unavailable
    )
    assert other == Unavailable("x")  # a changed input recomputes; an unavailable section is not stored
    assert SectionCache(str(tmp_path), 0, []).load("s", {"a": 2}, PlannerSection) is None
    (tmp_path / "target-0" / "s.json").write_text("{broken")
    assert SectionCache(str(tmp_path), 0, []).load("s", {"a": 1}, PlannerSection) is None  # damaged: recompute
    assert not list(tmp_path.rglob("*.tmp"))
