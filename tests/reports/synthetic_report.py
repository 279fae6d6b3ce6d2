"""A hand-built report with every section filled (and each 'declined', 'failed' and 'not available'
form), built from the typed model without running an audit, for testing the schema and the renderers."""

from __future__ import annotations

import numpy as np
from scipy import stats

from reports.audit.model import (
    AccountantRow,
    AccountingSection,
    Analytic,
    AnalyticResult,
    Bound,
    CalibrationSection,
    Claim,
    Empirical,
    EmpiricalResult,
    Finding,
    PlannerSection,
    ProbeSection,
    Series,
    Status,
    TargetResult,
    TargetVerdict,
    Unavailable,
    UtilitySection,
)
from reports.model import new_report


def _gaussian_roc(mu: float, label: str, n: int = 60) -> Series:
    fpr = np.logspace(-5, 0, n)
    return Series(label, tuple(fpr.tolist()), tuple(stats.norm.cdf(stats.norm.ppf(fpr) + mu).tolist()))


def _probe() -> ProbeSection:
    bound = {
        "method": "clopper-pearson",
        "epsilon": 0.25,
        "delta": 1e-5,
        "confidence": 0.975,
        "rigorous": True,
        "assumptions": "independent trials",
        "details": {"threshold": 0.5},
    }
    gdp = dict(bound, method="gdp", epsilon=0.6, rigorous=False, assumptions="scores follow a GDP model")
    return ProbeSection(
        "gaussian",
        "mechanism",
        "ran",
        threat_model="server view",
        description="one noisy reward",
        trials=10000,
        seed=1,
        params={"epsilon": 1.0},
        bounds=(bound, gdp),
        roc=_gaussian_roc(0.2, "empirical ROC"),
        auc=0.56,
        tradeoff=_gaussian_roc(0.21, "exact trade-off bound"),
        true_epsilon=0.75,
        status="PASS",
        p_value=0.8,
        ceiling=7.4,
        confidence=0.975,
        batches_total=2,
    )


def _accounting() -> AccountingSection:
    rows = [AccountantRow(a, "add-remove", "none", 1e-5, e, "ok", "", True) for a, e in (("exact", 0.75), ("rdp", 0.9))]
    rows.append(AccountantRow("prv", "add-remove", "none", 1e-5, None, "failed", "ImportError: x|y", True))
    rows += [
        AccountantRow(a, "replace-one", "fixed-size", 1e-5, None, "unsupported", "no analysis", False)
        for a in ("exact", "rdp")
    ]
    over = (Series("exact", (1.0, 2.0, 4.0), (0.75, 1.1, 1.6)),)
    return AccountingSection(
        "Gaussian(noise_multiplier=4.845)", 1, tuple(rows), ("rdp is looser",), 1e-6, tuple(rows[:1]), over
    )


def _target(claim: Claim) -> TargetResult:
    probes = (
        _probe(),
        ProbeSection("subsampled-gaussian", "mechanism", "declined", "samples fixed-size"),
        ProbeSection("end-to-end", "end-to-end", "failed", "worker killed"),
    )
    analytic = AnalyticResult(Analytic.PROVED, 0.75, "exact")
    empirical = EmpiricalResult(
        Empirical.PASS,
        Bound(0.25, "clopper-pearson on probe gaussian"),
        7.4,
        1,
        ("end-to-end",),
        ("subsampled-gaussian",),
        0.975,
        0.8,
    )
    verdict = TargetVerdict(Status.INCONCLUSIVE, "probe-failed", analytic, empirical, Bound(0.75, "exact"), 0.5)
    calibration = CalibrationSection(
        "classic",
        10.0,
        1e-5,
        {
            "epsilon": 10.0,
            "delta": 1e-5,
            "noise_multiplier": 0.48,
            "true_delta": 2.27e-5,
            "violated": True,
            "analytic_noise_multiplier": 0.5,
        },
        8.42,
        (
            {
                "epsilon": 10.0,
                "delta": 1e-5,
                "noise_multiplier": 0.48,
                "true_delta": 2.27e-5,
                "analytic_noise_multiplier": 0.5,
                "violated": True,
            },
        ),
    )
    utility = UtilitySection(
        "regret",
        "dp-fed-pne",
        tuple(range(1, 11)),
        tuple(10.0 / r for r in range(1, 11)),
        (0.1,) * 9 + (2.74e-18,),
        3,
        1.0,
        (0.75,) * 10,
        "exact",
        1e-5,
        context={"objective": "garland", "clients": 3},
    )
    findings = (
        Finding(
            "large-delta",
            "high",
            {"delta": 1e-5, "delta_times_units": 0.7, "leak_probability": 0.5, "units": 70000, "unit_name": "rewards"},
        ),
    )
    return TargetResult(
        "synthetic <target>",
        "gaussian",
        "A synthetic target & co.",
        {"sigma": 4.845},
        claim,
        _accounting(),
        calibration,
        PlannerSection(10000, 1e-5, 0.975, 7.4, 8.1, 100, "cp"),
        probes,
        utility,
        findings,
        verdict,
    )


def _second(claim: Claim) -> TargetResult:
    analytic = AnalyticResult(Analytic.UNDETERMINED, None, None)
    empirical = EmpiricalResult(Empirical.INCONCLUSIVE, None, None, 0, (), (), 0.95, None)
    verdict = TargetVerdict(Status.INCONCLUSIVE, "untestable", analytic, empirical, None, None)
    return TargetResult(
        "second",
        "gaussian",
        "",
        {},
        claim,
        Unavailable("accountants failed"),
        None,
        Unavailable("planner missing"),
        (),
        Unavailable("no utility run"),
        (),
        verdict,
    )


def synthetic_report() -> dict:
    claim = Claim(1.0, 1e-5, "add-remove", "one reward of one client", source="synthetic")
    provenance = {
        "packages": {"numpy": np.__version__},
        "python": "3.11",
        "platform": "test",
        "seed": 7,
        "config": {"seed": 7},
        "config_source": "inline",
        "config_hash": "sha256:" + "0" * 64,
        "command": "dpaudit audit",
        "started": "t0",
        "finished": "t1",
        "duration_seconds": 1.5,
    }
    return new_report("Synthetic audit", [_target(claim), _second(claim)], provenance)
