"""Tied scores and row order: no estimator's bound may depend on the order of rows (issue 29).

The battery: null scores (independent of the labels) of four kinds, continuous, rounded (to integers
and to 0.1), binary and constant, each laid out three ways: rows grouped by label with the excluded
(world 0) rows first, with the included rows first, and shuffled. For every repetition the bounds must
be IDENTICAL across the three layouts (a deterministic property: any difference fails), and over
AUDITS repetitions the positive rigorous bounds must stay at the nominal rate: the count is
stochastically below Binomial(AUDITS, 1 - confidence), and a one-sided binomial test at level 0.001
fails the test, so each rate check has false-failure probability at most 0.001.

It reaches the estimators the way users do: ``dpaudit estimate`` (its ``compute_bounds`` and the whole
command on the issue's files), the Flower canary bounds, and the DP-SGD one-run audit.
"""

import numpy as np
import pytest

from attacks.estimators import METHODS, estimate_all
from attacks.estimators.one_run_guesses import guess_outcomes
from attacks.probes.flower_bounds import canary_bounds
from reports.cli import main
from reports.commands.estimate import compute_bounds
from reports.commands.estimate_input import Scores
from tests.attacks.test_estimators_validity import AUDITS, assert_at_most_nominal

DELTA = 1e-5
BAYES_AUDITS = 10
KINDS = {
    "continuous": lambda rng, n: rng.normal(size=n),
    "integers": lambda rng, n: np.round(rng.normal(size=n)),
    "tenths": lambda rng, n: np.round(rng.normal(size=n), 1),
    "binary": lambda rng, n: (rng.random(n) < 0.5).astype(float),
    "constant": lambda rng, n: np.zeros(n),
}


def layouts(rng, scores, labels):
    """(scores, labels) with rows grouped by label both ways, and shuffled."""
    for first in (False, True):
        order = np.argsort(labels != first, kind="stable")   # rows with label == first come first
        yield scores[order], labels[order]
    order = rng.permutation(scores.size)
    yield scores[order], labels[order]


def epsilons(bounds) -> dict:
    return {b.method: (b.epsilon, b.rigorous) for b in bounds}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_one_run_estimate_ignores_row_order_and_is_valid_on_nulls(kind):
    rng = np.random.default_rng(2900 + sorted(KINDS).index(kind))
    m = 1000
    cache, positive = {}, {"one-run": 0, "fdp-one-run": 0}
    for _ in range(AUDITS):
        scores, included = KINDS[kind](rng, m), rng.random(m) < 0.5
        seen = []
        for s, lab in layouts(rng, scores, included):
            outcomes = tuple(guess_outcomes(s, lab)[1])
            if outcomes not in cache:   # the bounds are a function of the guess outcomes alone
                data = Scores("one-run", s, lab, "battery")
                cache[outcomes] = epsilons(compute_bounds(data, DELTA, 0.95, seed=0))
            seen.append(cache[outcomes])
        assert seen[0] == seen[1] == seen[2], seen
        for method in positive:
            positive[method] += seen[2][method][0] > 0
    # one-run is rigorous; fdp-one-run's test of mu is valid on nulls (0-GDP), so any positive bound is
    # a false rejection for both
    for method, count in positive.items():
        assert_at_most_nominal(count), method


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_multi_run_estimate_ignores_row_order_and_is_valid_on_nulls(kind):
    # Every estimator ``estimate`` runs on a multi-run file; the Bayesian one (not rigorous, about 50x the
    # others' time) on the first BAYES_AUDITS repetitions only: its order invariance is checked there.
    rng = np.random.default_rng(2950 + sorted(KINDS).index(kind))
    n = 2000   # per world
    fast = [m for m in METHODS if m != "bayesian-jeffreys"]
    positive = dict.fromkeys(fast, 0)
    for rep in range(AUDITS):
        scores = KINDS[kind](rng, 2 * n)
        world = np.arange(2 * n) >= n
        seen = []
        for s, w in layouts(rng, scores, world):
            data = Scores("multi-run", s, w, "battery")
            if rep < BAYES_AUDITS:
                seen.append(epsilons(compute_bounds(data, DELTA, 0.95, seed=0)))
            else:
                seen.append(epsilons(estimate_all(*data.worlds(), DELTA, 0.95, methods=fast, rng=0)))
        assert seen[0] == seen[1] == seen[2], seen
        for method in fast:
            positive[method] += seen[2][method][0] > 0
    # the Clopper-Pearson variants are rigorous; the GDP bound is model-based, but null scores are 0-GDP,
    # so a positive GDP bound is a false rejection too
    for method, count in positive.items():
        assert_at_most_nominal(count), method


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_flower_canary_bounds_ignore_row_order_and_are_valid_on_nulls(kind):
    # Both threat models' scores null, signs +-1 fair coins: every rigorous bound positive at most at the
    # nominal rate (the two threat models are Bonferroni-combined inside canary_bounds).
    rng = np.random.default_rng(2980 + sorted(KINDS).index(kind))
    m, positive = 400, 0
    for _ in range(AUDITS // 2):
        signs = np.where(rng.random(m) < 0.5, 1, -1)
        final, iterates = KINDS[kind](rng, m), KINDS[kind](rng, m)
        seen = []
        for first in (1, -1, 0):
            order = rng.permutation(m) if first == 0 else np.argsort(signs != first, kind="stable")
            canaries = {"signs": signs[order], "final_model": {"scores": final[order]},
                        "all_iterates": {"scores": iterates[order]}}
            seen.append([(b["threat_model"], b["method"], b["epsilon"]) for b in canary_bounds(canaries, DELTA, 0.95)])
        assert seen[0] == seen[1] == seen[2], seen
        positive += any(eps > 0 for _, method, eps in seen[2] if method == "one-run")
    assert_at_most_nominal(positive, AUDITS // 2)


def test_the_issue_files_give_zero_and_no_violation(tmp_path, capsys):
    # Issue 29: 1000 canaries, every score 0, excluded rows first gave one-run 4.517 and fdp-one-run 7.50,
    # a VIOLATION of a claim of 1 (exit 1); included rows first gave 0. Now 0 both ways, exit 0.
    labels = np.r_[np.zeros(500, int), np.ones(500, int)]
    for name, rows in (("excluded_first", labels), ("included_first", labels[::-1])):
        path = tmp_path / f"{name}.csv"
        path.write_text("score,included\n" + "".join(f"0,{b}\n" for b in rows))
        assert main(["estimate", str(path), "--claim-epsilon", "1", "--format", "json"]) == 0
        text = capsys.readouterr().out
        assert '"status": "PASS"' in text and '"epsilon": 0.0' in text


def test_guess_outcomes_cut_between_distinct_values_only():
    # Hand-checked: scores 0,0,1,1,1,2 (sorted); a rule of 4 guesses takes "in" for the 2 highest and
    # "out" for the 2 lowest. The 2 highest would split the three 1s: only the 2 is guessed "in". The 2
    # lowest are the two 0s, a whole tie group: both guessed "out".
    scores = np.array([1, 0, 2, 1, 0, 1], dtype=float)
    included = np.array([True, False, True, False, True, True])
    m, [outcome] = guess_outcomes(scores, included, [4])
    assert m == 6 and outcome.guesses == 4 and outcome.made == 3
    assert outcome.correct == 2   # the 2 is included (right); of the 0s one is excluded (right), one not
    with pytest.raises(Exception, match="finite"):
        guess_outcomes([0.0, np.nan], [True, False], [2])


def test_dpsgd_one_run_bounds_ignore_tied_scores(monkeypatch):
    # The DP-SGD one-run audit scores each canary and hands the scores to the one-run estimators. With
    # every canary's score tied (a score that cannot tell them apart), no guess can be made, so both
    # bounds are 0 whatever the inclusions' order. The training runs for real (one epoch, tiny).
    from attacks.probes import get_probe
    from attacks.probes.dpsgd import DpsgdAllIteratesProbe
    from attacks.probes.dpsgd_one_run import one_run_gradient_canaries

    probe = get_probe("dpsgd-all-iterates", epochs=1)
    monkeypatch.setattr(DpsgdAllIteratesProbe, "score_updates", lambda self, updates: np.zeros(200))
    run = one_run_gradient_canaries(probe, 200, seed=4, delta=DELTA)
    assert run.bound("one-run").epsilon == 0.0 and run.bound("fdp-one-run").epsilon == 0.0
    assert run.bound("one-run").details["guesses_made"] == 0
