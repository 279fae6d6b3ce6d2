"""One-run bounds from continuous canary signals: the Gaussian view (``one_run_gauss``, model-based) and the weighted
guesses (``one_run_weighted``, rigorous), their wiring into the train form's gradient canaries, and bad input.

References are closed forms written here, never the code under test: the mu-GDP privacy profile
delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) solved with scipy, binomial tails of scipy, and the
exactness of the Gaussian-shift model (the mu bound's misses are Binomial(runs, 1 - confidence)). Seeds are fixed;
each randomised test states the probability that a correct implementation fails it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, special, stats

from accounting.errors import ConfigurationError
from accounting.exact import gaussian_epsilon
from attacks.estimators import CANARY_ONE_RUN_METHODS, estimate_one_run
from attacks.estimators.one_run_gauss import mu_lower_bound, one_run_gauss_from_scores, standardized_difference
from attacks.estimators.one_run_weighted import (
    one_run_weighted_ceiling,
    one_run_weighted_from_scores,
    rule_summary,
    weight_rules,
    weighted_p_value,
    weighted_tail,
)

TRAIN = Path(__file__).resolve().parents[1] / "dpsgd_outside" / "train_digits.py"
TAIL = 1e-7  # each binomial tolerance below is this far into the tail: a correct estimator fails it that rarely


def gdp_epsilon(mu: float, delta: float) -> float:
    """The mu-GDP epsilon at delta from the closed-form profile (independent of ``accounting.exact``)."""
    def profile(eps):
        return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta

    return optimize.brentq(profile, 0.0, 100.0, xtol=1e-12)


def gaussian_runs(mu: float, runs: int, canaries: int, seed: int):
    rng = np.random.default_rng(seed)
    included = rng.random((runs, canaries)) < 0.5
    return mu * included + rng.standard_normal((runs, canaries)), included


# --- the Gaussian view against the closed form -------------------------------------------------------------------

@pytest.mark.parametrize("mu", [0.0, 0.5, 1.5])
def test_the_mu_bound_covers_the_true_mu_at_the_stated_confidence(mu):
    """2,000 simulated runs of 1,000 canaries with signals N(mu b, 1): under this model the bound is exact, so its
    misses (bound above mu) are Binomial(2000, 0.05): both tails checked at 1e-7 (false failure below 2e-7); at
    mu = 0 these are null runs and a miss is any positive bound."""
    signals, included = gaussian_runs(mu, 2000, 1000, seed=int(10 * mu) + 1)
    _, t, n_in, n_out = standardized_difference(signals, included)
    bounds = mu_lower_bound(t, n_in, n_out, 0.95)
    misses = int(np.sum(bounds > mu))
    assert stats.binom.ppf(TAIL, 2000, 0.05) <= misses <= stats.binom.isf(TAIL, 2000, 0.05), misses
    one = one_run_gauss_from_scores(signals[0], included[0], 1e-5)   # the estimator is these pieces
    assert one.details["mu_lower_bound"] == pytest.approx(bounds[0], abs=1e-9) and not one.rigorous


def test_the_epsilon_bound_is_below_the_true_gdp_epsilon_in_95_percent_of_runs():
    """mu = 1: the epsilon bound exceeds the true mu-GDP epsilon at delta 1e-5 (closed form) in at most
    Binomial(2000, 0.05) runs (false failure below 1e-7); with 1,000 canaries it is also close to it on average."""
    truth = gdp_epsilon(1.0, 1e-5)
    signals, included = gaussian_runs(1.0, 2000, 1000, seed=7)
    _, t, n_in, n_out = standardized_difference(signals, included)
    epsilons = np.array([gaussian_epsilon(mu, 1e-5) if mu > 0 else 0.0 for mu in mu_lower_bound(t, n_in, n_out)])
    assert np.sum(epsilons > truth) <= stats.binom.isf(TAIL, 2000, 0.05)
    assert 0.8 * truth < np.median(epsilons) < truth


def test_degenerate_groups_give_no_evidence():
    assert one_run_gauss_from_scores([1.0, 2.0, 3.0], [1, 1, 1], 1e-5).epsilon == 0.0   # nobody excluded
    assert one_run_gauss_from_scores([1.0, 1.0, 1.0, 1.0], [1, 0, 1, 0], 1e-5).epsilon == 0.0  # no spread


# --- the weighted guesses: exact tails and validity at the worst case ---------------------------------------------

def test_the_tail_is_the_binomial_closed_form():
    """One level: k Binomial(n, q) >= value is scipy's binomial tail; two levels: the explicit double sum."""
    counts = np.zeros(17, dtype=int)
    counts[3] = 40
    assert weighted_tail(counts, 3 * 25, 0.6) == pytest.approx(stats.binom.sf(24, 40, 0.6), abs=2e-9)
    counts[1] = 7
    a, b = np.arange(8), np.arange(41)
    joint = np.outer(stats.binom.pmf(a, 7, 0.7), stats.binom.pmf(b, 40, 0.7))
    exact = joint[(a[:, None] + 3 * b[None, :]) >= 100].sum()
    assert weighted_tail(counts, 100, 0.7) == pytest.approx(exact, abs=2e-9) and weighted_tail(counts, 0, 0.7) == 1


def randomized_response(runs: int, canaries: int, epsilon: float, seed: int):
    """An epsilon-DP mechanism at its worst for the test: each canary's sign right with probability
    e^eps / (1 + e^eps), its magnitude random (independent of the coin)."""
    rng = np.random.default_rng(seed)
    for _ in range(runs):
        included = rng.random(canaries) < 0.5
        right = rng.random(canaries) < special.expit(epsilon)
        yield rng.exponential(size=canaries) * np.where(included == right, 1.0, -1.0), included


@pytest.mark.parametrize("side, threshold", [("both", 0.7), ("in", 0.8)])
def test_one_rules_p_value_is_valid_and_nearly_exact_at_the_worst_case(side, threshold):
    """1,000 runs of randomized response at epsilon 1 (pure DP: any delta), 200 canaries: one rule's p-value at
    epsilon 1 is at most alpha in at most alpha of the runs (upper binomial tail 1e-7 at alpha 0.05 and 0.2) and,
    the worst case being tight, not far less often (lower tail 1e-7 at alpha 0.2, allowing the weights'
    discreteness a factor 0.7): false failure below 3e-7."""
    p_values = []
    for scores, included in randomized_response(1000, 200, 1.0, seed=3):
        rules = weight_rules(scores, thresholds=(threshold,), sides=(side,))
        summaries = [rule_summary(weights, guesses == included) for _, _, guesses, weights in rules]
        p_values.append(weighted_p_value(1.0, 0.0, summaries, 200))
    p_values = np.array(p_values)
    for alpha in (0.05, 0.2):
        assert np.sum(p_values <= alpha) <= stats.binom.isf(TAIL, 1000, alpha)
    assert np.sum(p_values <= 0.2) >= stats.binom.ppf(TAIL, 1000, 0.7 * 0.2)


def test_the_estimator_is_valid_at_the_true_epsilon_of_a_gaussian_mechanism():
    """200 runs of 300 canaries whose scores are the log-likelihood ratios of a 2-GDP mechanism: the p-value of
    its own (epsilon, 1e-5) (closed form) is at most 0.05 in at most Binomial(200, 0.05) runs (false failure below
    1e-7); and the bound of a few runs stays below that epsilon."""
    truth = gdp_epsilon(2.0, 1e-5)
    signals, included = gaussian_runs(2.0, 200, 300, seed=5)
    scores = 2.0 * signals - 2.0
    p_values = []
    for s, inc in zip(scores, included, strict=True):
        summaries = [rule_summary(w, g == inc) for _, _, g, w in weight_rules(s)]
        p_values.append(weighted_p_value(truth, 1e-5, summaries, 300))
    assert np.sum(np.array(p_values) <= 0.05) <= stats.binom.isf(TAIL, 200, 0.05)
    assert all(0 < one_run_weighted_from_scores(s, i, 1e-5).epsilon < truth for s, i in zip(scores[:3], included[:3],
                                                                                             strict=True))


def test_scores_order_alone_matters_and_the_ceiling_is_every_guess_right():
    """Weights are functions of the ranks (an increasing transformation changes nothing); with every guess right
    (half the canaries in, all above the others) the bound reaches the ceiling, the closed form logit(level^(1/r))
    with r the most canaries a rule weighs."""
    rng = np.random.default_rng(2)
    included = rng.random(400) < 0.5
    scores = rng.normal(size=400) + 1.5 * included
    a = one_run_weighted_from_scores(scores, included, 1e-5, claim=1.0)
    b = one_run_weighted_from_scores(np.exp(3 * scores) - 7, included, 1e-5, claim=1.0)
    assert a.epsilon == b.epsilon > 0 and a.details == b.details and a.rigorous
    half = rng.permutation(400) < 200  # half in: the median splits them, so every rule's every guess is right
    perfect = one_run_weighted_from_scores(np.where(half, 1.0, -1.0) * (1 + rng.random(400)), half, 1e-5)
    ceiling = one_run_weighted_ceiling(400, 1e-5)
    weighed = max(int((w > 0).sum()) for *_, w in weight_rules(np.arange(400)))
    level = (0.05 - 400 * 1e-5 * special.expit(-ceiling)) / 12
    assert perfect.epsilon == pytest.approx(ceiling, abs=1e-5)
    assert ceiling == pytest.approx(special.logit(level ** (1 / weighed)), abs=1e-4)


def test_the_claims_p_value_decides_and_a_wrong_claim_is_refused():
    from attacks.probes.one_run import bound_dict, one_run_decision

    rng = np.random.default_rng(4)
    included = rng.random(1000) < 0.5
    scores = 6.0 * (rng.normal(size=1000) + 6.0 * included) - 18.0  # 6-GDP: far beyond a claim of 1
    bounds = [bound_dict(b, "test") for b in estimate_one_run(scores, included, 1e-5, methods=CANARY_ONE_RUN_METHODS,
                                                              claim=1.0)]
    status, p_value, ceiling = one_run_decision(bounds, 1000, 1.0, 1e-5, 0.95)
    weighted = next(b for b in bounds if b["method"] == "one-run-weighted")
    assert status == "VIOLATION" and p_value <= 2 * weighted["details"]["claim_p_value"] < 0.01
    assert weighted["epsilon"] > 4 and ceiling >= one_run_weighted_ceiling(1000, 1e-5, 0.975)
    with pytest.raises(ValueError, match="tested the claim 1.0, not 2.0"):
        one_run_decision(bounds, 1000, 2.0, 1e-5, 0.95)


# --- the train form's gradient canaries (opacus on scikit-learn's digits, 58 steps, claim 3.0) --------------------

@pytest.fixture(scope="module")
def trainings():
    """Correct, null (coins drawn, nothing inserted) and half-noise trainings, 1,000 canaries each, seed 1."""
    from attacks.opacus_checks.observed import check_training
    from attacks.opacus_checks.train_run import run_user_training
    from dpfed.dpsgd.loop_canaries import LoopCanaries

    out = {}
    for name, function, insert in [("correct", "train", True), ("null", "train", False),
                                   ("half", "train_half_noise", True)]:
        training = run_user_training(f"{TRAIN}:{function}", canaries=LoopCanaries(1000, 1, insert=insert))
        out[name] = check_training(training, 1e-5)
    return out


def by_method(checked) -> dict:
    return {b["method"]: b["epsilon"] for b in checked["canaries"]["bounds"]}


def test_a_correct_training_bounds_below_its_accounted_epsilon_and_a_null_run_bounds_nothing(trainings):
    """Each rigorous bound exceeds the true epsilon with probability at most 0.05 (seeded: fixed outcome); the
    model-based ones carry no guarantee and are checked for this seed."""
    correct, null = trainings["correct"], trainings["null"]
    claim = correct["claim"]
    assert set(by_method(correct)) == set(CANARY_ONE_RUN_METHODS) and claim == pytest.approx(3.0, abs=0.01)
    assert all(0 <= eps < claim for eps in by_method(correct).values()), by_method(correct)
    assert correct["canaries"]["status"] == "PASS" and by_method(correct)["one-run-weighted"] > 0
    assert all(eps == 0 for eps in by_method(null).values()), by_method(null)
    [finding] = [f for f in correct["findings"] if f.code == "canary-bound"]
    assert "one-run-weighted" in finding.message and "model-based, no verdict: fdp-one-run" in finding.message
    assert finding.values["bounds"] == by_method(correct)


def test_half_the_noise_raises_the_signal_bounds_above_the_correct_runs(trainings):
    correct, half = by_method(trainings["correct"]), by_method(trainings["half"])
    assert half["one-run-weighted"] > max(correct["one-run-weighted"], half["one-run"]) + 0.3
    assert half["one-run-gauss"] > correct["one-run-gauss"] + 1


# --- bad input ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("estimate", [one_run_weighted_from_scores, one_run_gauss_from_scores])
@pytest.mark.parametrize("scores, included, delta, confidence, match", [
    ([0.1, 0.2, 0.3], [1, 0], 1e-5, 0.95, "one inclusion flag per canary score"),
    ([], [], 1e-5, 0.95, "no canaries"),
    ([0.1, np.nan], [1, 0], 1e-5, 0.95, "finite"),
    ([0.1, 0.2], [1, 2], 1e-5, 0.95, "0/1"),
    ([0.1, 0.2], [1, 0], 1e-5, 1.0, "confidence"),
    ([0.1, 0.2], [1, 0], 1e-5, 0.0, "confidence"),
    ([0.1, 0.2], [1, 0], 1e-5, 1.5, "confidence"),
    ([0.1, 0.2], [1, 0], 1.0, 0.95, "delta"),
    ([0.1, 0.2], [1, 0], -1e-5, 0.95, "delta"),
])
def test_bad_input_is_refused_naming_it(estimate, scores, included, delta, confidence, match):
    with pytest.raises(ConfigurationError, match=match):
        estimate(scores, included, delta, confidence)


def test_a_negative_claim_and_a_bad_confidence_for_mu_are_refused():
    with pytest.raises(ConfigurationError, match="claim"):
        one_run_weighted_from_scores([0.1, 0.2], [1, 0], 1e-5, claim=-1.0)
    with pytest.raises(ConfigurationError, match="confidence"):
        mu_lower_bound(3.0, 10, 10, confidence=1.0)
    with pytest.raises(ConfigurationError, match="canaries"):
        one_run_weighted_ceiling(0, 1e-5)
