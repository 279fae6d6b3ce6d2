"""The audit orchestrator's parts: accounting section, findings, calibration check, trade-off curve,
verdict combination and the resumable section cache. Reference values come from the DP-FTS-DE paper's
published numbers and the notes' independent computations (seed_dpftsde.md 4.4-4.7, seed_fedpne.md 3.3),
or from closed forms evaluated with scipy here; none from the code under test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from accounting.mechanisms import Composition, Gaussian, SubsampledGaussian
from attacks import audit_accounting as acc
from attacks import audit_findings as fnd
from attacks.audit import AuditOptions
from attacks.audit_cache import SectionCache

DELTA_29 = 29.0**-1.1
FTS_MECH = SubsampledGaussian(0.35, 1.0, 11.0, population=29)
FTS_CLAIM = {"epsilon": 15.17, "delta": DELTA_29, "neighbouring": "add-remove", "unit": "one agent"}


@pytest.fixture(scope="module")
def fts_accounting():
    return acc.accounting_section(
        FTS_MECH, 60, FTS_CLAIM, ["moments", "pld"], rounds_names=("pld",), rounds_points=3
    )


def test_accounting_reproduces_published_and_reference_numbers(fts_accounting):
    rows = fts_accounting["rows"]
    # paper (Fig. 3a / notebook): 15.17; notes 4.5: PLD 10.38, replace-one PLD 21.39
    assert acc.epsilon_of(rows, "moments") == pytest.approx(15.17, abs=0.01)
    assert acc.epsilon_of(rows, "pld") == pytest.approx(10.38, abs=0.03)
    replace = [
        r
        for r in rows
        if r["neighbouring"] == "replace-one" and r["sampling"] == "poisson" and r["accountant"] == "pld"
    ]
    assert replace[0]["epsilon"] == pytest.approx(21.39, abs=0.05)
    # notes 4.5 at delta = 1e-5: paper recipe 22.97, PLD 19.74
    ref = {r["accountant"]: r["epsilon"] for r in fts_accounting["at_reference_delta"]}
    assert ref["moments"] == pytest.approx(22.97, abs=0.01)
    assert ref["pld"] == pytest.approx(19.74, abs=0.05)
    # both relations and both sampling schemes appear; fixed-size rows say why they are unsupported
    combos = {(r["neighbouring"], r["sampling"]) for r in rows}
    assert combos == {(n, s) for n in ("add-remove", "replace-one") for s in ("poisson", "fixed-size")}
    assert all(r["reason"] for r in rows if r["status"] != "ok")
    over = fts_accounting["over_rounds"]
    assert over["rounds"][-1] == 60 and over["series"][0]["y"][-1] == pytest.approx(10.38, abs=0.03)
    assert all(np.diff([y for y in over["series"][0]["y"]]) > 0)


def test_findings_are_computed(fts_accounting):
    findings = {f["id"]: f for f in fnd.findings(FTS_CLAIM, fts_accounting, None, 29, "agents")}
    assert "claim-holds" in findings
    large = findings["large-delta"]
    # notes 4.7 F1: delta = 0.71/N, 1 - (1 - delta)^29 ~ 51%
    assert large["values"]["delta_times_units"] == pytest.approx(0.714, abs=0.001)
    assert large["values"]["leak_probability"] == pytest.approx(1 - (1 - DELTA_29) ** 29)
    assert "51%" in large["text"] and large["severity"] == "high"
    assert "22.97" in findings["reference-delta"]["text"]
    assert findings["other-relation"]["values"]["epsilon"] == pytest.approx(21.39, abs=0.05)


def test_small_delta_for_many_units_is_not_flagged(fts_accounting):
    claim = dict(FTS_CLAIM, delta=1e-7)
    ids = {f["id"] for f in fnd.findings(claim, fts_accounting, None, 29, "agents")}
    assert "large-delta" not in ids


def test_classic_calibration_section_matches_notes():
    section = fnd.calibration_section(10.0, 1e-5, "classic")
    # seed_fedpne.md 3.3(a): first failing epsilon 8.42 at delta = 1e-5; true delta(10) = 2.27e-5
    assert section["failure_threshold"] == pytest.approx(8.42, abs=0.01)
    assert section["claim_check"]["true_delta"] == pytest.approx(2.27e-5, rel=0.01)
    assert section["claim_check"]["violated"]
    assert "8.42" in section["text"] and "does NOT" in section["text"]
    finding = [
        f
        for f in fnd.findings(
            {"epsilon": 10.0, "delta": 1e-5, "neighbouring": "replace-one", "unit": "reward"},
            {"rows": []},
            section,
            None,
            "",
        )
        if f["id"] == "classic-calibration"
    ][0]
    assert finding["severity"] == "high" and "fails for large epsilon" in finding["text"]


def test_analytic_check_refutes_with_the_exact_profile():
    sigma = math.sqrt(2 * math.log(1.25 / 1e-5)) / 10.0  # classic calibration at (10, 1e-5)
    claim = {"epsilon": 10.0, "delta": 1e-5, "neighbouring": "add-remove", "unit": "one record"}
    section = acc.accounting_section(Gaussian(sigma), 1, claim, ["exact", "rdp"])
    check = fnd.analytic_check(claim, section)
    assert check["status"] == "refuted" and check["epsilon"] > 10.0
    verdict = fnd.combine_verdict(claim, section, check, [], 0.95)
    assert verdict["status"] == "VIOLATION"


def test_gaussian_tradeoff_is_the_closed_form_and_the_profile_route_agrees():
    fpr = np.logspace(-6, -0.01, 25)
    mu = 0.5
    expected = stats.norm.cdf(stats.norm.ppf(fpr) + mu)  # GDP trade-off (Dong, Roth, Su 2019)
    exact = acc.tradeoff_curve(Gaussian(1 / mu), 1, fpr)
    assert np.allclose(exact["y"], expected, rtol=1e-9)
    profile = acc.profile_tradeoff(Composition.of(Gaussian(1 / mu), 1), fpr)
    y = np.array(profile["y"])
    assert np.all(y >= expected * (1 - 1e-3))  # the profile route is conservative ...
    assert np.all(y <= expected * 1.05 + 1e-6)  # ... and close for a Gaussian


def _probe(status, eps, p_value, ceiling):
    bound = {
        "method": "clopper-pearson",
        "epsilon": eps,
        "delta": 1e-5,
        "confidence": 0.95,
        "rigorous": True,
        "assumptions": "",
    }
    return {
        "name": "p",
        "available": True,
        "bounds": [bound],
        "verdict": {"status": status, "p_value": p_value, "ceiling": ceiling},
    }


def test_combine_verdict_rules():
    claim = {"epsilon": 1.0, "delta": 1e-5, "neighbouring": "add-remove", "unit": "x"}
    accounting = {"rows": [{"accountant": "exact", "claimed_setting": True, "status": "ok", "epsilon": 0.9}]}
    v = fnd.combine_verdict(claim, accounting, None, [_probe("PASS", 0.3, 1.0, 5.0)], 0.95)
    assert v["status"] == "PASS" and v["gap"] == pytest.approx(0.6)
    v = fnd.combine_verdict(claim, accounting, None, [_probe("INCONCLUSIVE", 0.3, 1.0, 0.5)], 0.95)
    assert v["status"] == "INCONCLUSIVE"
    v = fnd.combine_verdict(
        claim, accounting, None, [_probe("PASS", 0.3, 1.0, 5.0), _probe("VIOLATION", 2.0, 0.01, 5.0)], 0.95
    )
    assert v["status"] == "VIOLATION" and v["p_value"] == pytest.approx(0.02)  # Bonferroni over 2 probes
    assert v["lower_bound"]["epsilon"] == 2.0
    assert fnd.combine_verdict(claim, accounting, None, [], 0.95)["status"] == "INCONCLUSIVE"


def test_section_cache_resumes_without_recomputing(tmp_path):
    calls = []
    options = AuditOptions(work_dir=str(tmp_path))
    cache = SectionCache(str(tmp_path), 0, options)
    first = cache.get_or_compute("s", {"a": 1}, lambda: calls.append(1) or {"value": np.float64(1.5)})
    again = SectionCache(str(tmp_path), 0, options).get_or_compute("s", {"a": 1}, lambda: calls.append(1))
    assert first == again == {"value": 1.5} and len(calls) == 1
    assert options.resumed == ["target-0/s"]
    other = cache.get_or_compute("s", {"a": 2}, lambda: {"value": 2})  # a changed input recomputes
    assert other == {"value": 2}
    assert not [p for p in tmp_path.rglob("*.tmp")]
