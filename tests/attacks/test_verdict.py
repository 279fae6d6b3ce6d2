"""Verdicts: violation / pass / inconclusive, the p-value's validity and its agreement with the bound."""

import json

import numpy as np
import pytest
from scipy import stats

from accounting import analytic_gaussian_noise_multiplier
from accounting.errors import ConfigurationError
from attacks.estimators import (
    EpsilonBound,
    clopper_pearson_lower_bound,
    estimate_all,
    one_run_lower_bound,
)
from attacks.verdict import decide


def gaussian_scores(seed, z, trials):
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, z, trials), rng.normal(1.0, z, trials)


def test_violation_for_noise_ten_times_smaller_than_claimed():
    z = analytic_gaussian_noise_multiplier(2.0, 1e-5)
    out, inn = gaussian_scores(1, z / 10, 10**5)
    verdict = decide(2.0, 1e-5, estimate_all(out, inn, 1e-5), trials=10**5)
    assert verdict.status == "VIOLATION" and verdict.p_value <= 0.05
    assert verdict.best_bound.rigorous and verdict.best_bound.epsilon > 2.0
    json.dumps(verdict.to_dict())


def test_pass_for_correct_mechanism_and_inconclusive_for_tiny_budget():
    z = analytic_gaussian_noise_multiplier(2.0, 1e-5)
    out, inn = gaussian_scores(2, z, 10**5)
    verdict = decide(2.0, 1e-5, estimate_all(out, inn, 1e-5), trials=10**5)
    assert verdict.status == "PASS" and verdict.p_value > 0.05 and verdict.ceiling > 2.0
    out, inn = gaussian_scores(3, z, 20)
    verdict = decide(4.0, 1e-5, estimate_all(out, inn, 1e-5), trials=20)
    assert verdict.status == "INCONCLUSIVE" and verdict.ceiling < 4.0


def test_p_value_agrees_with_the_bound():
    z = analytic_gaussian_noise_multiplier(1.0, 0.1)
    out, inn = gaussian_scores(4, z, 20_000)
    bound = clopper_pearson_lower_bound(out, inn, 0.1)
    for claim in np.linspace(0.2, 1.2, 11):
        verdict = decide(claim, 0.1, [bound], trials=20_000)
        assert (verdict.p_value <= 0.05) == (bound.epsilon > claim), claim
        assert (verdict.status == "VIOLATION") == (bound.epsilon > claim)


def test_p_value_is_valid_on_a_correct_mechanism():
    # The claim is the truth (exact Gaussian at (1, 0.1)); a valid p-value is <= 0.05 in at most 5% of
    # 200 audits; the binomial check rejects at 0.001 (false-failure probability <= 0.001).
    z = analytic_gaussian_noise_multiplier(1.0, 0.1)
    rng = np.random.default_rng(5)
    small = 0
    for _ in range(200):
        out, inn = rng.normal(0.0, z, 10_000), rng.normal(1.0, z, 10_000)
        small += decide(1.0, 0.1, [clopper_pearson_lower_bound(out, inn, 0.1)], trials=10_000).p_value <= 0.05
    assert stats.binomtest(small, 200, 0.05, alternative="greater").pvalue > 0.001


def test_model_based_bounds_never_declare_violation():
    gdp = EpsilonBound("gdp", 5.0, 1e-5, 0.95, False, "model-based")
    verdict = decide(1.0, 1e-5, [gdp], trials=10**5)
    assert verdict.status == "PASS" and verdict.p_value is None and verdict.best_bound is None


def test_several_rigorous_bounds_are_bonferroni_corrected():
    z = analytic_gaussian_noise_multiplier(1.0, 0.1)
    out, inn = gaussian_scores(6, z, 20_000)
    cp = clopper_pearson_lower_bound(out, inn, 0.1)
    split = clopper_pearson_lower_bound(out, inn, 0.1, threshold_selection="split", rng=1)
    one = decide(0.5, 0.1, [cp], trials=20_000).p_value
    both = decide(0.5, 0.1, [cp, split], trials=20_000).p_value
    p_split = decide(0.5, 0.1, [split], trials=20_000).p_value
    assert both == pytest.approx(min(1.0, 2 * min(one, p_split)))


def test_one_run_and_foreign_bounds():
    bound = one_run_lower_bound(1000, 1000, 950, 1e-5)
    assert decide(bound.epsilon * 0.9, 1e-5, [bound], trials=1).status == "VIOLATION"
    assert decide(bound.epsilon * 1.1, 1e-5, [bound], trials=10**6).status == "PASS"
    # A rigorous bound without stored evidence counts only at a delta at least the claimed one.
    bare = EpsilonBound("other", 3.0, 1e-6, 0.95, True, "x")
    assert decide(2.0, 1e-5, [bare], trials=10**6).status == "PASS"
    bare = EpsilonBound("other", 3.0, 1e-4, 0.95, True, "x")
    assert decide(2.0, 1e-5, [bare], trials=10**6).status == "VIOLATION"


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"claim_delta": 0.0}, "claim_delta"),
        ({"claim_epsilon": -1.0}, "claim_epsilon"),
        ({"confidence": 1.0}, "confidence"),
        ({"trials": 0}, "trials"),
    ],
)
def test_bad_input(kwargs, field):
    args = {"claim_epsilon": 1.0, "claim_delta": 1e-5, "bounds": [], "trials": 100, **kwargs}
    with pytest.raises(ConfigurationError) as info:
        decide(**args)
    assert info.value.field == field
