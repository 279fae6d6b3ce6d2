"""One-run bounds with the guess rule chosen on held-out canaries, median over splits (``one_run_split``):
validity on null scores, ties, and the wiring into ``estimate_one_run``."""

import numpy as np
import pytest
from scipy import stats

from attacks.estimators import estimate_one_run
from attacks.estimators.one_run_split import split_median_from_scores

REPS, CANARIES, ALPHA, SPLITS = 200, 100, 0.05, 3


def _allowed_positives(reps: int, alpha: float, false_failure: float = 1e-3) -> int:
    """The largest count of positive bounds a valid method exceeds with probability at most ``false_failure``."""
    return int(next(c for c in range(reps + 1) if stats.binom.sf(c, reps, alpha) <= false_failure))


@pytest.mark.slow
@pytest.mark.parametrize("fdp", [False, True])
def test_null_scores_give_positive_bounds_at_most_at_the_nominal_rate(fdp):
    """Continuous null: N(0, 1) scores whatever the inclusion, 200 files of 100 canaries (seeded), 3 splits
    (the median rule is the same code for any odd count; 11 splits took 220 s per variant here). A valid
    bound at confidence 0.95 is positive with probability at most 0.05; the test allows the count c with
    P[Binom(200, 0.05) > c] <= 1e-3 (c = 21): the false-failure probability is at most 1e-3."""
    positive = 0
    for rep in range(REPS):
        rng = np.random.default_rng([rep, 2029])
        included = rng.random(CANARIES) < 0.5
        scores = rng.normal(0.0, 1.0, CANARIES)
        positive += split_median_from_scores(scores, included, 1e-5, 1 - ALPHA, fdp=fdp, splits=SPLITS,
                                             seed=rep).epsilon > 0
    assert positive <= _allowed_positives(REPS, ALPHA), positive


@pytest.mark.parametrize("excluded_first", [True, False])
def test_tied_scores_grouped_by_label_give_zero(excluded_first):
    """Every score 0, rows grouped by inclusion: value thresholds guess all or none, so no evidence."""
    included = np.repeat([not excluded_first, excluded_first], 500)
    for fdp in (False, True):
        bound = split_median_from_scores(np.zeros(1000), included, 1e-5, 0.95, fdp=fdp)
        assert bound.epsilon == 0.0


def test_rounded_null_grouped_by_label_gives_zero_mostly():
    """Null scores rounded to integers, rows grouped by label (the row-order trap of issue 29): value
    thresholds ignore the order, so positives stay rare (10 files; at most 3 allowed, P <= 0.012 if valid)."""
    positive = 0
    for rep in range(10):
        rng = np.random.default_rng([rep, 7])
        included = np.sort(rng.random(400) < 0.5)
        scores = np.round(rng.normal(0.0, 1.0, 400))
        positive += split_median_from_scores(scores, included, 1e-5, 0.95, splits=5, seed=rep).epsilon > 0
    assert positive <= 3


def test_signal_is_found_and_the_result_says_how():
    rng = np.random.default_rng(11)
    included = rng.random(1000) < 0.5
    scores = rng.normal(3.0 * included, 1.0)
    bound = split_median_from_scores(scores, included, 1e-5, 0.95, seed=4)
    assert bound.rigorous and bound.method == "one-run-split-median"
    assert bound.epsilon > 2.0
    d = bound.details
    assert d["seed"] == 4 and d["splits"] == 11 and len(d["split_epsilons"]) == 11
    assert bound.epsilon == sorted(d["split_epsilons"], reverse=True)[5]
    assert d["canaries"] < 1000 and d["rule"]["in_when_score_at_least"] is not None
    methods = ("one-run", "one-run-split-median", "fdp-one-run-split-median")
    got = estimate_one_run(scores, included, 1e-5, methods=methods, seed=4)
    assert [b.method for b in got] == list(methods)
    # two rigorous methods ran, so each is at its Bonferroni share of the level: 1 - 0.05 / 2
    at_share = split_median_from_scores(scores, included, 1e-5, 0.975, seed=4)
    assert got[1].epsilon == at_share.epsilon and got[1].confidence == 0.975 and not got[2].rigorous
    assert [b.method for b in estimate_one_run(scores, included, 1e-5)] == ["one-run", "fdp-one-run"]


def test_row_order_does_not_change_the_bound():
    # The split is laid on the canaries ordered by (score, inclusion), so grouping rows by label either way
    # or shuffling them gives the identical bound (rounded scores: many ties with both labels).
    rng = np.random.default_rng(31)
    included = rng.random(600) < 0.5
    scores = np.round(rng.normal(size=600) + 1.5 * included)
    results = set()
    for order in (np.argsort(included, kind="stable"), np.argsort(~included, kind="stable"), rng.permutation(600)):
        bound = split_median_from_scores(scores[order], included[order], 1e-5, splits=3)
        results.add((bound.epsilon, tuple(bound.details["split_epsilons"])))
    assert len(results) == 1 and next(iter(results))[0] > 0


def test_p_value_agrees_with_the_bound():
    # The verdict's p-value (twice the median-rank split p-value) is at most 1 - confidence exactly when the
    # bound exceeds the claim: checked on both sides of the bound.
    from attacks.verdict import bound_p_value

    rng = np.random.default_rng(32)
    included = rng.random(2000) < 0.5
    bound = split_median_from_scores(rng.normal(size=2000) + 2.0 * included, included, 1e-5, splits=5)
    assert bound.epsilon > 0.5
    assert bound_p_value(bound, bound.epsilon - 0.05, 1e-5) <= 0.05
    assert bound_p_value(bound, bound.epsilon + 0.05, 1e-5) > 0.05


def test_estimate_cli_split_flag(tmp_path, capsys):
    from reports.cli import main

    path = tmp_path / "multi.csv"
    path.write_text("score,world\n" + "".join(f"{i % 7},{i % 2}\n" for i in range(100)))
    assert main(["estimate", str(path), "--one-run-split"]) == 2
    assert "one-run scores only" in capsys.readouterr().err
    assert main(["estimate", "configs/estimate_example_onerun.csv", "--one-run-split", "--format", "json"]) == 0
    assert '"one-run-split-median"' in capsys.readouterr().out
