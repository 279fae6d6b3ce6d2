"""The replace-one pair fixed-size sampling realises (``accounting.replace_one_pair``) against independent
references: the Gaussian closed form at q = 1, a direct numerical integral of one release's hockey-stick
divergence in both orders, a simulation of the dataset that realises the pair, and our RDP accountant for
fixed-size replace-one (an upper bound it must stay below)."""

import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from accounting.errors import ConfigurationError
from accounting.exact import gaussian_epsilon
from accounting.replace_one_pair import worst_pair_epsilon


@pytest.mark.parametrize("shift, releases", [(0.4, 1), (0.4, 3), (1.0, 10)])
def test_without_sampling_it_is_the_gaussian_closed_form(shift, releases):
    exact = gaussian_epsilon(2 * shift * math.sqrt(releases), 1e-5)  # mu = 2a sqrt(T) (Dong, Roth, Su)
    low = worst_pair_epsilon(1.0, shift, releases, 1e-5, bound="lower")
    high = worst_pair_epsilon(1.0, shift, releases, 1e-5, bound="upper")
    assert low <= exact + 1e-9 and high >= exact - 1e-9
    assert high - low < 0.01


def _log_densities(rate, gap, x):
    log_p = np.logaddexp(math.log1p(-rate) + stats.norm.logpdf(x), math.log(rate) + stats.norm.logpdf(x - gap))
    return log_p, stats.norm.logpdf(x)


def hockey_stick(rate: float, gap: float, epsilon: float) -> float:
    """max over both orders of delta(epsilon) for P = (1-q) N(0,1) + q N(gap,1) and Q = N(0,1), one release,
    integrated directly (the likelihood ratio P/Q increases in x, so each order has one crossing point)."""
    def ratio(x):
        log_p, log_q = _log_densities(rate, gap, x)
        return log_p - log_q

    def density_difference(x, sign):
        log_p, log_q = _log_densities(rate, gap, x)
        first, second = (log_p, log_q) if sign > 0 else (log_q, log_p)
        return math.exp(first) - math.exp(epsilon + second)

    out = 0.0
    if ratio(60.0) > epsilon:  # P above e^eps Q right of x0
        x0 = optimize.brentq(lambda x: ratio(x) - epsilon, -60, 60)
        out = max(out, integrate.quad(density_difference, x0, np.inf, args=(1,), epsabs=1e-14)[0])
    if ratio(-60.0) < -epsilon:  # Q above e^eps P left of x1
        x1 = optimize.brentq(lambda x: ratio(x) + epsilon, -60, 60)
        out = max(out, integrate.quad(density_difference, -np.inf, x1, args=(-1,), epsabs=1e-14)[0])
    return out


@pytest.mark.parametrize("rate, shift", [(0.073, 0.4), (0.3, 1.0), (0.8, 2.0)])
def test_one_release_brackets_the_direct_integral(rate, shift):
    delta = 1e-5
    low = worst_pair_epsilon(rate, shift, 1, delta, bound="lower")
    high = worst_pair_epsilon(rate, shift, 1, delta, bound="upper")
    assert hockey_stick(rate, 2 * shift, low) >= delta * (1 - 1e-6)  # a lower epsilon leaves delta at least as large
    assert hockey_stick(rate, 2 * shift, high) <= delta * (1 + 1e-6)
    assert high - low < 0.01


def test_the_pair_is_what_fixed_size_sampling_releases_on_that_dataset():
    """Simulate the dataset of the module docstring (N = 10, m = 3, z = 2: client i sends +u, the rest -u)
    and compare the released mean's projection on u, in noise stds, with P; with D' it is Q. The KS tests
    fail falsely with probability 2e-3 each; the seed is fixed."""
    rng = np.random.default_rng(11)
    population, sampled, z, trials = 10, 3, 2.0, 20000
    updates = np.full(population, -1.0)
    updates[0] = 1.0  # client i
    releases = np.empty(trials)
    for t in range(trials):
        batch = rng.choice(population, sampled, replace=False)
        releases[t] = updates[batch].mean() + rng.normal(0.0, z / sampled)
    standardised = (releases + 1.0) / (z / sampled)
    rate, gap = sampled / population, 2.0 / z

    def mixture_cdf(x):
        return (1 - rate) * stats.norm.cdf(x) + rate * stats.norm.cdf(x - gap)

    assert stats.kstest(standardised, mixture_cdf).pvalue > 2e-3
    neighbour = (-1.0 + rng.normal(0.0, z / sampled, trials) + 1.0) / (z / sampled)
    assert stats.kstest(neighbour, stats.norm.cdf).pvalue > 2e-3


@pytest.mark.parametrize("sampled, population, z, rounds", [(16, 220, 2.5, 3), (44, 220, 2.5, 10), (10, 100, 1.0, 100)])
def test_below_the_rdp_upper_bound_of_fixed_size_replace_one(sampled, population, z, rounds):
    from dpfed.flower.config import FlowerDpConfig, accounted_rows

    rows = accounted_rows(FlowerDpConfig("server-fixed", rounds, population, sampled, z, weighting="equal"), 1e-5)
    assert rows["worst-pair"]["epsilon"] <= rows["runs"]["epsilon"]
    assert rows["worst-pair"]["epsilon"] == pytest.approx(worst_pair_epsilon(sampled / population, 1 / z, rounds, 1e-5))


def test_monotone_and_zero_without_shift():
    assert worst_pair_epsilon(0.2, 0.0, 5, 1e-5) == 0.0
    values = [worst_pair_epsilon(0.2, a, 5, 1e-5) for a in (0.2, 0.4, 0.8)]
    assert values == sorted(values) and values[0] > 0
    rates = [worst_pair_epsilon(q, 0.5, 5, 1e-5) for q in (0.05, 0.2, 1.0)]
    assert rates == sorted(rates)


def test_a_huge_shift_is_bounded_below_at_the_cap_without_a_long_computation():
    from accounting.replace_one_pair import MAX_SHIFT

    at_cap = worst_pair_epsilon(0.2, MAX_SHIFT, 20, 1e-5)
    assert worst_pair_epsilon(0.2, 1e6, 20, 1e-5) == at_cap > 100  # a noiseless release: capped, still huge
    with pytest.raises(ConfigurationError):
        worst_pair_epsilon(0.2, 1e6, 20, 1e-5, bound="upper")


@pytest.mark.parametrize("kwargs", [dict(rate=0.0), dict(rate=1.5), dict(shift=-1.0), dict(releases=0),
                                    dict(delta=0.0), dict(bound="middle")])
def test_bad_input_is_a_configuration_error(kwargs):
    args = dict(rate=0.1, shift=0.5, releases=3, delta=1e-5) | kwargs
    with pytest.raises(ConfigurationError):
        worst_pair_epsilon(**args)
