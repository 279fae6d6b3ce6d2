"""A hand-built report with every section filled (and one of each 'not available' form), independent of
the audit orchestrator, for testing the schema and the renderers."""

from __future__ import annotations

import numpy as np
from scipy import stats

from reports.model import claim_in_words, new_report, unavailable


def _gaussian_roc(mu: float, n: int = 60):
    fpr = np.logspace(-5, 0, n)
    return fpr.tolist(), stats.norm.cdf(stats.norm.ppf(fpr) + mu).tolist()


def synthetic_report() -> dict:
    claim = {
        "epsilon": 1.0,
        "delta": 1e-5,
        "neighbouring": "add-remove",
        "unit": "one reward of one client",
        "source": "synthetic",
    }
    claim["text"] = claim_in_words(claim)
    x, y = _gaussian_roc(0.2)
    tx, ty = _gaussian_roc(0.21)
    bound = {
        "method": "clopper-pearson",
        "epsilon": 0.25,
        "delta": 1e-5,
        "confidence": 0.95,
        "rigorous": True,
        "assumptions": "independent trials",
        "details": {"threshold": 0.5},
    }
    gdp = dict(bound, method="gdp", epsilon=0.6, rigorous=False, assumptions="scores follow a GDP model")
    probe = {
        "name": "gaussian",
        "kind": "mechanism",
        "available": True,
        "threat_model": "server view",
        "description": "one noisy reward",
        "trials": 10000,
        "seed": 1,
        "bounds": [bound, gdp],
        "roc": {"x": x, "y": y, "label": "empirical"},
        "auc": 0.56,
        "tradeoff": {"x": tx, "y": ty, "label": "exact trade-off bound"},
        "true_epsilon": 0.75,
    }
    missing = {"name": "end-to-end", "kind": "end-to-end", "available": False, "reason": "not built yet"}
    rows = [
        {
            "accountant": a,
            "neighbouring": "add-remove",
            "sampling": "none",
            "delta": 1e-5,
            "epsilon": e,
            "status": "ok",
            "reason": "",
            "claimed_setting": True,
        }
        for a, e in (("exact", 0.75), ("rdp", 0.9))
    ]
    rows.append(
        {
            "accountant": "prv",
            "neighbouring": "add-remove",
            "sampling": "none",
            "delta": 1e-5,
            "epsilon": None,
            "status": "failed",
            "reason": "ImportError: x|y",
            "claimed_setting": True,
        }
    )
    accounting = {
        "mechanism": "Gaussian(noise_multiplier=4.845)",
        "rows": rows,
        "notes": ["rdp is looser"],
        "reference_delta": 1e-6,
        "at_reference_delta": rows[:1],
        "over_rounds": {
            "rounds": [1, 2, 4],
            "series": [{"x": [1, 2, 4], "y": [0.75, 1.1, 1.6], "label": "exact"}],
        },
    }
    verdict = {
        "status": "PASS",
        "p_value": 0.8,
        "reason": "no evidence against the claim",
        "ceiling": 8.1,
        "upper_bound": {"epsilon": 0.75, "source": "exact"},
        "lower_bound": {"epsilon": 0.25, "source": "clopper-pearson"},
        "gap": 0.5,
        "analytic": {"status": "holds", "text": "exact epsilon 0.75 <= 1"},
    }
    utility = {
        "metric": "regret",
        "rounds": list(range(1, 11)),
        "values": [10.0 / r for r in range(1, 11)],
        "stderr": [0.1] * 10,
        "runs": 3,
        "final": 1.0,
        "epsilon_spent": [0.75] * 10,
        "note": "synthetic",
    }
    target = {
        "name": "synthetic <target>",
        "algorithm": "gaussian",
        "description": "A synthetic target & co.",
        "parameters": {"sigma": 4.845},
        "claim": claim,
        "accounting": accounting,
        "calibration": {
            "text": "classic fails from 8.42",
            "grid": [
                {
                    "epsilon": 10.0,
                    "delta": 1e-5,
                    "noise_multiplier": 0.48,
                    "true_delta": 2.27e-5,
                    "analytic_noise_multiplier": 0.5,
                    "violated": True,
                }
            ],
        },
        "planner": {
            "trials": 10000,
            "delta": 1e-5,
            "confidence": 0.95,
            "ceiling": 8.1,
            "trials_for_claim": 100,
        },
        "probes": [probe, missing],
        "verdict": verdict,
        "utility": utility,
        "findings": [{"id": "F1", "severity": "high", "text": "delta is large"}],
    }
    second = dict(
        target,
        name="second",
        probes=[],
        utility=unavailable("no utility run"),
        accounting=unavailable("accountants failed"),
        planner=unavailable("planner missing"),
        calibration=None,
        verdict=dict(
            verdict,
            status="INCONCLUSIVE",
            p_value=None,
            gap=None,
            upper_bound=None,
            lower_bound=None,
            ceiling=None,
            analytic=None,
        ),
        findings=[],
    )
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
    return new_report("Synthetic audit", [target, second], provenance)
