"""The planner budgets with the estimator that will run (Bonferroni Clopper-Pearson over its rank grid),
and the attack's verdict ceiling is that estimator's: checked against scipy's beta quantiles and
against the estimator itself on perfectly separated scores, never against the planner's own formula."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from attacks.estimators import clopper_pearson_lower_bound, estimate_all
from attacks.planner import trials_needed
from attacks.verdict import decide
from reports.cli import main

DELTA = 1e-5


def scipy_ceiling(n: int, delta: float, confidence: float = 0.95) -> float:
    """A perfect attack at the rank-1 order statistic, Bonferroni over 2 x (grid of 32 geometric ranks)
    tests, each rate bounded at half the per-test level: Clopper-Pearson via scipy's beta quantiles."""
    tests = 2 * np.unique(np.round(np.geomspace(1, n, 32)).astype(np.int64)).size
    half = (1 - confidence) / tests / 2
    tpr_lower = stats.beta.ppf(half, n, 1)  # n successes out of n
    fpr_upper = stats.beta.ppf(1 - half, 1, n)  # 0 successes out of n
    return math.log((tpr_lower - delta) / fpr_upper)


@pytest.mark.parametrize("target", [2.0, 4.0, 8.0])
def test_plan_returns_a_budget_the_default_estimator_reaches(target, capsys):
    assert main(["plan", "--claim-epsilon", str(target), "--delta", str(DELTA), "--format", "json"]) == 0
    n = json.loads(capsys.readouterr().out)["trials_needed"]
    assert scipy_ceiling(n, DELTA) >= target - 1e-9
    assert scipy_ceiling(n - 1, DELTA) < target  # and not more than needed (the grid is monotone here)
    # the estimator itself, on a perfect attack with n trials per world, certifies the target
    bound = clopper_pearson_lower_bound(np.zeros(n), np.ones(n), DELTA)
    assert bound.epsilon >= target - 1e-9


def test_issue_numbers_were_under_counts():
    # the single-threshold answers the planner gave before (204 and 10999) do not reach 4 and 8
    assert scipy_ceiling(204, DELTA) < 4 and scipy_ceiling(10999, DELTA) < 8
    assert trials_needed(4, DELTA) > 204 and trials_needed(8, DELTA) > 10999


def test_the_verdict_ceiling_is_the_estimators_and_a_claim_above_it_is_not_a_pass(capsys):
    trials = 100_000
    assert main(["plan", "--trials", "1e5", "--delta", str(DELTA), "--format", "json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    estimator, single = planned["default_estimator_ceiling"], planned["max_certifiable_epsilon"]
    assert estimator == pytest.approx(scipy_ceiling(trials, DELTA), rel=1e-6) and estimator < single
    bounds = estimate_all(np.zeros(trials), np.ones(trials), DELTA)  # a perfect attack
    between = (estimator + single) / 2
    verdict = decide(between, DELTA, bounds, trials)
    assert verdict.ceiling == pytest.approx(estimator, rel=1e-9)
    assert verdict.status == "INCONCLUSIVE"
    assert decide(estimator - 0.05, DELTA, bounds, trials).status == "VIOLATION"


def test_attack_cli_verdict_ceiling_equals_plan(capsys):
    args = ["attack", "gaussian", "--trials", "1e5", "--seed", "1", "--format", "json", "--no-progress"]
    assert main(["plan", "--trials", "1e5", "--delta", str(DELTA), "--format", "json"]) == 0
    estimator = json.loads(capsys.readouterr().out)["default_estimator_ceiling"]
    code = main([*args, "--delta", str(DELTA), "--claim-epsilon", "9.8"])
    result = json.loads(capsys.readouterr().out)
    assert result["verdict"]["ceiling"] == pytest.approx(estimator, rel=1e-9)
    assert 9.8 > estimator and result["verdict"]["status"] == "INCONCLUSIVE" and code == 3
