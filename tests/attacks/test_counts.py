"""Counts over pilot-fixed thresholds: exact counts, validity on null worlds, power, constant memory.

Validity tests repeat an audit AUDITS times and count how often a rigorous bound is wrong (positive on
null worlds, above the true epsilon of an exact Gaussian mechanism). For a valid estimator at
confidence 0.95 that count is stochastically below Binomial(AUDITS, 0.05); a test fails when a
one-sided binomial test rejects at level 0.001, so each has false-failure probability at most 0.001.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats

from accounting import analytic_gaussian_noise_multiplier, gaussian_epsilon
from accounting.errors import ConfigurationError
from attacks.attack import run_attack
from attacks.batches import ExactSum
from attacks.estimators.counts import estimate_all_counts, roc_from_counts, summarise_counts
from attacks.estimators.grid import grid_tests, pilot_grid
from attacks.probes.base import Probe
from attacks.roc import empirical_roc

AUDITS = 200
LEVEL = 0.001
RIGOROUS = ("clopper-pearson", "clopper-pearson-split")


def assert_at_most_nominal(failures: int, audits: int = AUDITS, nominal: float = 0.05):
    p = stats.binomtest(failures, audits, nominal, alternative="greater").pvalue
    assert p > LEVEL, f"{failures}/{audits} audits wrong (nominal {nominal:.0%}), p = {p:.2g}"


def counts_audit(rng, draw, trials=5000, pilot=2000, delta=1e-3):
    """One counts-based audit: pilot grid from fresh draws, then test counts of fresh draws."""
    grid = pilot_grid(draw(rng, 0, pilot), draw(rng, 1, pilot), trials, trials, delta, 0.95)
    counts = [grid.count(draw(rng, w, trials)) for w in (0, 1)]
    return grid, counts, estimate_all_counts(grid, counts[0], counts[1], delta, 0.95, methods=RIGOROUS)


@pytest.mark.parametrize("kind", ["continuous", "discrete"])
def test_rigorous_counts_bounds_on_null_worlds(kind):
    rng = np.random.default_rng(31 + (kind == "discrete"))
    if kind == "continuous":

        def draw(rng, world, n):
            return rng.normal(size=n)
    else:  # heavy ties: the grid's tests must count atoms on the right side

        def draw(rng, world, n):
            return rng.integers(0, 4, n).astype(float)

    wrong = {m: 0 for m in RIGOROUS}
    for _ in range(AUDITS):
        for bound in counts_audit(rng, draw)[2]:
            wrong[bound.method] += bound.epsilon > 0
    for failures in wrong.values():
        assert_at_most_nominal(failures)


def test_rigorous_counts_bounds_on_an_exact_gaussian_mechanism():
    # (1, 0.1): the bound comes close to the truth at these trials, so an invalid one would show.
    epsilon, delta = 1.0, 0.1
    z = analytic_gaussian_noise_multiplier(epsilon, delta)
    true = gaussian_epsilon(1.0 / z, delta)
    rng = np.random.default_rng(33)

    def draw(rng, world, n):
        return rng.normal(float(world), z, n)

    wrong, best = 0, 0.0
    for _ in range(AUDITS):
        _, _, bounds = counts_audit(rng, draw, delta=delta)
        wrong += any(b.epsilon > true for b in bounds)
        best = max(best, bounds[0].epsilon)
    assert_at_most_nominal(wrong)
    assert best > 0.5 * true  # and the bounds have power


def test_grid_counts_match_direct_comparisons():
    rng = np.random.default_rng(3)
    pilot = rng.integers(0, 6, 500).astype(float)
    grid = pilot_grid(pilot, pilot + 1, 1000, 1000, 1e-3, 0.95)
    out, inn = rng.integers(0, 6, 1000).astype(float), rng.integers(1, 7, 1000).astype(float)
    tests = grid_tests(grid, grid.count(out), grid.count(inn))
    t = tests.threshold
    high = tests.direction == "in-high"
    expected_lower = np.where(high, (inn[:, None] > t).sum(0), (out[:, None] <= t).sum(0))
    expected_upper = np.where(high, (out[:, None] > t).sum(0), (inn[:, None] <= t).sum(0))
    assert np.array_equal(tests.lower_counts, expected_lower)
    assert np.array_equal(tests.upper_counts, expected_upper)


def test_roc_and_summary_from_counts_agree_with_the_scores():
    rng = np.random.default_rng(4)
    out, inn = rng.normal(size=20_000), rng.normal(0.7, 1.0, 20_000)
    grid = pilot_grid(rng.normal(size=5000), rng.normal(0.7, 1.0, 5000), 20_000, 20_000, 1e-3, 0.95)
    counts_out, counts_in = grid.count(out), grid.count(inn)
    fpr, tpr, auc = roc_from_counts(grid, counts_out, counts_in)
    exact_auc = empirical_roc(np.sort(out), np.sort(inn))[2]
    # closed form P(in > out) = Phi(0.7 / sqrt 2) = 0.6915; binning moves it by the grid's resolution only
    assert auc == pytest.approx(exact_auc, abs=2e-3)
    assert auc == pytest.approx(stats.norm.cdf(0.7 / np.sqrt(2)), abs=0.01)
    assert fpr[0] == tpr[0] == 0 and fpr[-1] == tpr[-1] == 1 and np.all(np.diff(fpr) >= 0)
    summary = summarise_counts(grid, counts_out)
    assert summary["count"] == 20_000 and summary["mean"] == pytest.approx(out.mean())
    assert summary["std"] == pytest.approx(out.std()) and summary["max"] == out.max()


def test_exact_sum_does_not_depend_on_order():
    rng = np.random.default_rng(5)
    values = rng.normal(size=2000) * 10.0 ** rng.integers(-12, 12, 2000)
    forward, backward = ExactSum(), ExactSum()
    for v in values:
        forward.add(float(v))
    for v in values[::-1]:
        backward.add(float(v))
    assert forward.value() == backward.value() == math.fsum(values)  # the stdlib's exact sum


@dataclass
class NullProbe(Probe):
    """Both worlds draw the same law: any positive rigorous bound is a false alarm."""

    discrete: bool = False
    name = "null"

    def scores(self, world, trials, rng):
        return rng.integers(0, 3, trials).astype(float) if self.discrete else rng.normal(size=trials)


def test_null_world_attacks_through_the_counts_path():
    # the whole path (pilot stream, batches, counts, estimators); fewer repetitions, same level
    wrong = sum(
        run_attack(
            NullProbe(discrete=bool(i % 2)), 3000, seed=i, reduction="counts", methods=list(RIGOROUS), delta=1e-3
        ).best_rigorous()
        > 0
        for i in range(60)
    )
    assert_at_most_nominal(wrong, audits=60)


def test_counts_are_identical_on_every_executor():
    from attacks.probes import get_probe

    probe = get_probe("gaussian")
    probe.batch_size = 2500
    runs = [
        run_attack(probe, 5000, seed=8, reduction="counts", executor=e, workers=2) for e in ("inprocess", "processes")
    ]
    assert np.array_equal(runs[0].counts["out"], runs[1].counts["out"])
    assert np.array_equal(runs[0].counts["in"], runs[1].counts["in"])
    assert runs[0].to_dict()["bounds"] == runs[1].to_dict()["bounds"]
    assert runs[0].scores_out is None and runs[0].reduction == "counts"


def test_the_plan_picks_sorted_for_small_budgets_and_counts_beyond():
    from attacks.probes import get_probe
    from attacks.run_plan import SORTED_MAX_TRIALS, plan_run

    probe = get_probe("gaussian")
    gib = 2**30
    assert plan_run(probe, SORTED_MAX_TRIALS, memory=8 * gib).reduction == "sorted"
    big = plan_run(probe, 10**12, memory=8 * gib)
    assert big.reduction == "counts" and big.batches <= 100_000 and big.batch_size * big.batches >= 10**12
    assert plan_run(probe, 10**5, memory=8 * gib, reduction="counts").pilot_trials == 20_000
    with pytest.raises(ConfigurationError, match="at most"):
        plan_run(probe, 10**15, memory=8 * gib)
    with pytest.raises(ConfigurationError, match="counts"):
        plan_run(probe, 10**10, memory=8 * gib, reduction="sorted")
