"""Planner: closed-form ceilings, the inverse, and the ``dpaudit plan`` command."""

import json
import math

import pytest

from accounting.errors import ConfigurationError
from attacks.planner import max_certifiable_epsilon, single_threshold_trials_needed, trials_needed
from reports.cli import main


def closed_form(n, delta, confidence=0.95):
    half = (1 - confidence) / 2
    return math.log((half ** (1 / n) - delta) / (1 - half ** (1 / n)))


@pytest.mark.parametrize("trials, expected", [(100, 3.28), (1000, 5.60), (10_000, 7.90), (100_000, 10.21)])
def test_ceiling_matches_closed_form_and_published_table(trials, expected):
    # notes/anchors_audit.md 2.8: maximum certifiable epsilon of multi-run CP, 95%, delta = 1e-5.
    value = max_certifiable_epsilon(trials, 1e-5)
    assert value == pytest.approx(closed_form(trials, 1e-5), rel=1e-9)
    assert value == pytest.approx(expected, abs=0.006)


def test_ceiling_monotone_and_zero_when_delta_dominates():
    values = [max_certifiable_epsilon(n, 1e-5) for n in (1, 2, 10, 10**3, 10**6, 10**9)]
    assert values == sorted(values)
    assert max_certifiable_epsilon(1, 0.5) == 0.0
    assert max_certifiable_epsilon(10**6, 1e-5, confidence=0.99) < max_certifiable_epsilon(10**6, 1e-5)


@pytest.mark.parametrize("target", [0.5, 2.0, 4.0, 8.0, 12.0])
def test_single_threshold_trials_needed_is_the_smallest_sufficient_budget(target):
    n = single_threshold_trials_needed(target, 1e-5)
    assert max_certifiable_epsilon(n, 1e-5) >= target
    assert n == 1 or max_certifiable_epsilon(n - 1, 1e-5) < target


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda: max_certifiable_epsilon(0, 1e-5), "trials"),
        (lambda: max_certifiable_epsilon(10.5, 1e-5), "trials"),
        (lambda: max_certifiable_epsilon(10, 0.0), "delta"),
        (lambda: max_certifiable_epsilon(10, 1.0), "delta"),
        (lambda: max_certifiable_epsilon(10, 1e-5, 1.0), "confidence"),
        (lambda: max_certifiable_epsilon(10, 1e-5, 0.0), "confidence"),
        (lambda: trials_needed(-1.0, 1e-5), "target_epsilon"),
        # beyond any budget a float can count: the error named "trials", which the caller never gave
        (lambda: trials_needed(700.0, 0.999999), "target_epsilon"),
        (lambda: single_threshold_trials_needed(700.0, 0.999999), "target_epsilon"),
    ],
)
def test_bad_input_names_the_field(call, field):
    with pytest.raises(ConfigurationError) as info:
        call()
    assert info.value.field == field


def test_cli_prints_ceiling_and_trials(capsys):
    assert main(["plan", "--trials", "1000", "--delta", "1e-5"]) == 0
    assert "5.6006" in capsys.readouterr().out
    assert main(["plan", "--claim-epsilon", "2", "--delta", "1e-5", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["trials_needed"] == trials_needed(2.0, 1e-5)


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--trials", "0", "--delta", "1e-5"],
        ["plan", "--trials", "100", "--delta", "1e-5", "--confidence", "1.5"],
        ["plan", "--trials", "100", "--delta", "0"],
        ["plan", "--trials", "100", "--delta", "1"],
        ["plan", "--delta", "1e-5"],
        ["plan", "--trials", "many", "--delta", "1e-5"],
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse-level errors exit through the one-line parser
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err


@pytest.mark.parametrize("trials", [10, 1000, 50_000])
def test_bonferroni_ceiling_is_what_the_default_estimator_reaches_on_a_perfect_attack(trials):
    import numpy as np

    from attacks.estimators import clopper_pearson_lower_bound
    from attacks.planner import bonferroni_ceiling

    perfect = clopper_pearson_lower_bound(np.zeros(trials), np.ones(trials), 1e-5).epsilon
    assert bonferroni_ceiling(trials, 1e-5) == pytest.approx(perfect, rel=1e-9)
    assert bonferroni_ceiling(trials, 1e-5) < max_certifiable_epsilon(trials, 1e-5)


def test_cli_echoes_the_confidence_unrounded(capsys):
    # a confidence of 0.999999999999 was printed as "100% confidence"
    assert main(["plan", "--trials", "1000", "--delta", "1e-5", "--confidence", "0.999999999999"]) == 0
    assert "(99.9999999999% confidence, delta = 1e-05)" in capsys.readouterr().out
