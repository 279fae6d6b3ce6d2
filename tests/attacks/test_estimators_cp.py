"""Clopper-Pearson building blocks and estimator: reference values from closed forms and scipy."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from accounting.errors import ConfigurationError
from attacks.estimators import EpsilonBound, clopper_pearson_lower_bound, cp_lower, cp_upper, estimate_all
from attacks.estimators.binomial import threshold_epsilons, threshold_p_values
from attacks.estimators.thresholds import fixed_threshold_tests, order_statistic_tests, rank_grid
from attacks.planner import max_certifiable_epsilon


def test_cp_bounds_match_closed_forms_and_scipy_exact_interval():
    n, alpha = 1000, 0.01
    # Zero successes: upper = 1 - alpha^(1/n); all successes: lower = alpha^(1/n).
    assert cp_upper(0, n, alpha) == pytest.approx(1 - alpha ** (1 / n), rel=1e-10)
    assert cp_lower(n, n, alpha) == pytest.approx(alpha ** (1 / n), rel=1e-10)
    assert cp_lower(0, n, alpha) == 0.0 and cp_upper(n, n, alpha) == 1.0
    for k in (1, 17, 500, 999):
        # scipy's exact (Clopper-Pearson) two-sided interval at level 1 - 2 alpha = two one-sided bounds.
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * alpha, method="exact")
        assert cp_lower(k, n, alpha) == pytest.approx(ci.low, rel=1e-9)
        assert cp_upper(k, n, alpha) == pytest.approx(ci.high, rel=1e-9)


def test_threshold_epsilon_is_delta_aware_formula():
    eps, lower, upper = threshold_epsilons(990, 1000, 10, 1000, 0.01, 0.05)
    assert eps == pytest.approx(math.log((lower - 0.01) / upper))
    assert lower == pytest.approx(cp_lower(990, 1000, 0.025))
    assert upper == pytest.approx(cp_upper(10, 1000, 0.025))
    # Useless tests give 0, never NaN or negative.
    eps, _, _ = threshold_epsilons(np.array([0, 10]), 1000, np.array([5, 900]), 1000, 0.5, 0.05)
    assert np.all(eps == 0.0)


def test_p_value_is_the_smallest_rejecting_level():
    p = threshold_p_values(np.array([990]), 1000, np.array([10]), 1000, 3.0, 1e-5)[0]
    assert 0 < p < 1
    just_above, _, _ = threshold_epsilons(990, 1000, 10, 1000, 1e-5, p * 1.001)
    just_below, _, _ = threshold_epsilons(990, 1000, 10, 1000, 1e-5, p * 0.999)
    assert just_above > 3.0 >= just_below


def test_order_statistic_tests_count_correctly():
    out = np.arange(10.0)  # 0..9
    inn = np.arange(5.0, 15.0)  # 5..14
    tests = order_statistic_tests(out, inn, 4)
    k = rank_grid(10, 4)
    high = tests.direction == "in-high"
    np.testing.assert_array_equal(tests.threshold[high], out[10 - k])
    np.testing.assert_array_equal(tests.lower_counts[high], [(inn > t).sum() for t in out[10 - k]])
    np.testing.assert_array_equal(tests.upper_counts[high], k - 1)  # out scores strictly above t
    low = ~high
    np.testing.assert_array_equal(tests.lower_counts[low], [(out < s).sum() for s in inn[k - 1]])
    fixed = fixed_threshold_tests(out, inn, ["in-high", "out-low"], [7.0, 7.0])
    np.testing.assert_array_equal(fixed.lower_counts, [7, 7])  # in > 7: 8..14; out < 7: 0..6
    np.testing.assert_array_equal(fixed.upper_counts, [2, 2])  # out > 7: 8, 9; in < 7: 5, 6


@pytest.mark.parametrize("selection", ["bonferroni", "split"])
def test_perfect_attack_stays_below_planner_ceiling(selection):
    n = 1000
    bound = clopper_pearson_lower_bound(np.zeros(n), np.ones(n), 1e-5, threshold_selection=selection, rng=3)
    assert 0 < bound.epsilon <= max_certifiable_epsilon(n, 1e-5) + 1e-12
    assert bound.rigorous and bound.details["threshold_selection"] == selection


def test_bonferroni_detects_the_second_direction():
    # Scores where only the low tail separates: in-world never goes below 0, out-world often does.
    # The bound is about 5.7 (5.72 +- 0.01 over 50 other seeds, all "out-low"): 3 is ~200 sd away, so the
    # false-failure probability for a random seed is negligible (< 1e-9).
    rng = np.random.default_rng(0)
    out = rng.uniform(-1, 1, 5000)
    inn = rng.uniform(0, 1, 5000)
    bound = clopper_pearson_lower_bound(out, inn, 1e-5)
    assert bound.details["direction"] == "out-low" and bound.epsilon > 3


def test_bound_serialises_and_sanitises():
    bound = clopper_pearson_lower_bound(np.zeros(50), np.ones(50), 1e-3)
    json.dumps(bound.to_dict())
    assert EpsilonBound("x", float("nan"), 1e-5, 0.95, True, "a").epsilon == 0.0
    assert EpsilonBound("x", -1.0, 1e-5, 0.95, True, "a").epsilon == 0.0


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"delta": 1.0}, "delta"),
        ({"delta": -0.1}, "delta"),
        ({"confidence": 1.0}, "confidence"),
        ({"confidence": 0.0}, "confidence"),
        ({"scores_out": [np.nan, 1.0]}, "scores_out"),
        ({"scores_in": []}, "scores_in"),
        ({"scores_in": ["a"]}, "scores_in"),
        ({"threshold_selection": "best"}, "threshold_selection"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    args = {"scores_out": [0.0, 1.0], "scores_in": [1.0, 2.0], "delta": 1e-5, **kwargs}
    with pytest.raises(ConfigurationError) as info:
        clopper_pearson_lower_bound(**args)
    assert info.value.field == field


def test_estimate_all_runs_default_methods_and_rejects_unknown():
    rng = np.random.default_rng(1)
    bounds = estimate_all(rng.normal(0, 1, 2000), rng.normal(1, 1, 2000), 1e-5, rng=rng)
    assert [b.method for b in bounds] == ["clopper-pearson", "bayesian-jeffreys", "gdp"]
    assert [b.rigorous for b in bounds] == [True, False, False]
    with pytest.raises(ConfigurationError, match="methods"):
        estimate_all([0.0], [1.0], 1e-5, methods=["magic"])


def test_sorted_cache_follows_in_place_changes():
    from attacks.estimators.thresholds import as_sorted

    scores = np.random.default_rng(2).normal(size=200_000)
    first = as_sorted(scores)
    assert as_sorted(scores) is first  # one sort per audit
    scores[0] = 1e9  # the caller changes the array
    np.testing.assert_array_equal(as_sorted(scores), np.sort(scores))


def test_split_evaluation_counts_are_the_complement_of_the_selection():
    from attacks.estimators.thresholds import evaluation_tests, selection_mask, split_sorted

    rng = np.random.default_rng(3)
    out, inn = np.sort(rng.normal(size=5000)), np.sort(rng.normal(0.5, 1, size=4000))
    sel_out, sel_in = split_sorted(out, inn, np.random.default_rng(9), 0.3)
    gen = np.random.default_rng(9)
    keep_out, keep_in = selection_mask(gen, out.size, 0.3), selection_mask(gen, inn.size, 0.3)
    ev_out, ev_in = out[~keep_out], inn[~keep_in]
    tests = evaluation_tests(out, inn, sel_out, sel_in, ["in-high", "out-low"], [0.7, -0.2])
    assert tests.lower_counts.tolist() == [(ev_in > 0.7).sum(), (ev_out < -0.2).sum()]
    assert tests.upper_counts.tolist() == [(ev_out > 0.7).sum(), (ev_in < -0.2).sum()]
    assert tests.lower_totals.tolist() == [ev_in.size, ev_out.size]


def test_one_sort_per_world_across_estimators_and_roc():
    from attacks.estimators.thresholds import _SORTED_CACHE, as_sorted
    from attacks.roc import empirical_roc

    rng = np.random.default_rng(4)
    out, inn = rng.normal(size=150_000), rng.normal(size=150_000)
    estimate_all(out, inn, 1e-5, rng=0)
    cached = as_sorted(out)
    assert id(out) in _SORTED_CACHE and id(inn) in _SORTED_CACHE
    empirical_roc(out, inn)
    assert as_sorted(out) is cached
