"""The stated power of a budget (``attacks.power``) against simulations of the estimator the audits run.

Simulated audits draw Gaussian scores N(0, 1) (out) and N(mu, 1) (in) -- the likelihood-ratio scores of a
mu-GDP mechanism -- and run the default Clopper-Pearson estimator (Bonferroni over its rank grid), with a
fixed seed. Each statistical check fails only if its binomial p-value is below 1e-3, so a correct power
computation fails a check with probability at most 1e-3 for a random seed (the seed is fixed).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from accounting.mechanisms import Composition, Gaussian, Laplace, SubsampledGaussian
from attacks.estimators.binomial import threshold_epsilons
from attacks.estimators.clopper_pearson import DEFAULT_CANDIDATES, clopper_pearson_lower_bound
from attacks.estimators.thresholds import order_statistic_tests
from attacks.power import (
    probe_power,
    reduce_composition,
    refutation_probability,
    refuted_fraction,
    trials_for_power,
)

LEVEL = 1e-3
AUDITS = 200


def _simulate(rng, mu, trials, audits=AUDITS):
    """(out, in) score arrays of ``audits`` simulated audits, shape (audits, trials)."""
    return rng.normal(size=(audits, trials)), rng.normal(mu, size=(audits, trials))


@pytest.mark.parametrize("mu, claim", [(2.0, 2.0), (3.0, 3.0)])
def test_the_budget_for_power_0_9_refutes_at_least_that_often(mu, claim):
    trials = trials_for_power(mu, claim, 1e-5)
    assert refutation_probability(mu, trials, claim, 1e-5) >= 0.9
    out, inn = _simulate(np.random.default_rng(40 + int(mu)), mu, trials)
    refuted = sum(clopper_pearson_lower_bound(o, i, 1e-5).epsilon > claim for o, i in zip(out, inn, strict=False))
    # the stated power is a lower bound: fewer refutations than 0.9 would allow is a failure
    assert stats.binomtest(refuted, AUDITS, 0.9, alternative="less").pvalue > LEVEL, refuted


def test_the_per_rank_probability_is_exact():
    # The bound is max_k P_k; P_k itself is exact (Beta order statistic, binomial count): the simulated
    # frequency with which the best rank's test refutes matches it (two-sided binomial test).
    mu, claim, delta, trials = 2.0, 2.0, 1e-5, 400
    ranks = np.unique(np.round(np.geomspace(1, trials, DEFAULT_CANDIDATES)).astype(np.int64))
    alpha_each = 0.05 / (2 * ranks.size)
    out, inn = _simulate(np.random.default_rng(44), mu, trials, audits=1000)
    hits = np.zeros(ranks.size)
    for o, i in zip(out, inn, strict=False):
        tests = order_statistic_tests(np.sort(o), np.sort(i), DEFAULT_CANDIDATES)
        eps, _, _ = threshold_epsilons(tests.lower_counts, tests.lower_totals, tests.upper_counts,
                                       tests.upper_totals, delta, alpha_each)
        hits += eps[: ranks.size] > claim  # the in-high tests, in rank order
    from attacks.estimators.binomial import cp_upper
    from attacks.power import QUADRATURE, _rank_power

    nodes = (np.arange(QUADRATURE) + 0.5) / QUADRATURE
    predicted = [
        _rank_power(mu, trials, int(k), delta + math.exp(claim) * float(cp_upper(k - 1, trials, alpha_each / 2)),
                    alpha_each, nodes)
        for k in ranks
    ]
    best = int(np.argmax(predicted))
    assert 0.2 < predicted[best] < 0.99
    assert stats.binomtest(int(hits[best]), 1000, predicted[best]).pvalue > LEVEL, (hits[best], predicted[best])
    assert max(predicted) == pytest.approx(refutation_probability(mu, trials, claim, delta))


def test_the_reduction_of_the_mechanisms_the_probes_reduce_to():
    # closed forms: n Gaussian rounds of multiplier z are sqrt(n)/z-GDP; halving the noise doubles mu
    exact = reduce_composition(Composition.of(SubsampledGaussian(1.0, 8.0), 100))
    assert exact.method == "gdp-exact" and exact.mu == pytest.approx(1.25)
    assert exact.mu_at(0.5) == pytest.approx(2.5)
    assert reduce_composition(Gaussian(2.0)).mu == pytest.approx(0.5)
    clt = reduce_composition(Composition.of(SubsampledGaussian(0.1, 1.0), 1000))
    assert clt.method == "gdp-clt"
    assert clt.mu == pytest.approx(0.1 * math.sqrt(1000 * math.expm1(1.0)))  # Dong, Roth and Su, Cor. 5.4
    assert reduce_composition(Laplace(1.0)) is None


def test_more_noise_is_harder_to_refute_and_the_correct_noise_is_not_refuted():
    exact = reduce_composition(Composition.of(SubsampledGaussian(1.0, 8.0), 100))
    fraction = refuted_fraction(exact, 80_000, 5.7, 1e-5)
    assert 0.5 <= fraction < 1.0
    assert refutation_probability(exact.mu_at(1.0), 10**7, 5.7, 1e-5) < 0.9  # epsilon 5.68 <= claim 5.7


def test_probe_power_of_the_bundled_fedzero_probe_and_of_a_non_private_one():
    from attacks.probes.fedzero import FedZeroEndToEndProbe

    private = FedZeroEndToEndProbe(rounds=100, noise_multiplier=8.0, canary_scale=10.0)
    power = probe_power(private, 80_000, 5.7, 1e-5, confidence=0.975)
    assert power.refuted_fraction >= 0.5 and power.half_noise_trials <= 80_000
    assert "0.5" in power.sentence() and power.to_dict()["method"] == "gdp-exact"
    assert probe_power(FedZeroEndToEndProbe(private=False), 1000, 5.7, 1e-5) is None


def test_the_report_states_the_power_in_words_in_markdown_and_html():
    import copy

    from reports.model import validate_report
    from reports.power_words import audit_power_text
    from reports.render_html import render_html
    from reports.render_markdown import render_markdown
    from tests.reports.synthetic_report import synthetic_report

    exact = reduce_composition(Composition.of(SubsampledGaussian(1.0, 8.0), 100))
    from attacks.power import Power

    power = Power(80_000, 0.9, 0.5, 76_000, exact.method, exact.mu)
    report = copy.deepcopy(synthetic_report())
    probe = next(p for p in report["targets"][0]["probes"] if p["outcome"] == "ran")
    probe["power"] = power.to_dict()
    validate_report(report)  # the typed fields fit the schema
    sentence = "would refute an implementation adding 0.50 of the configured noise or less, with probability 0.9"
    assert sentence in render_markdown(report) and sentence in render_html(report)
    assert "it detects half the noise" in audit_power_text(report["targets"][0]["probes"])
    probe["power"] = dict(power.to_dict(), refuted_fraction=0.3)
    assert "does not detect half the noise" in audit_power_text(report["targets"][0]["probes"])
    assert audit_power_text([{"outcome": "ran", "power": None}]).startswith("Power: not stated")


def test_the_trial_search_ends_when_few_trials_suffice():
    # a regression: the geometric bisection once looped forever between two adjacent small counts
    trials = trials_for_power(19.8, 2.0, 1e-5)
    assert trials <= 100
    assert refutation_probability(19.8, trials, 2.0, 1e-5) >= 0.9
