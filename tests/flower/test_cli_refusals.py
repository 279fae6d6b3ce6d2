"""``dpaudit flower`` refuses, with one line and exit 2, before Flower starts: too few canaries for the one-run
estimators, and an ``--out`` that cannot be a directory (empty, a file without a .json, .md or .html ending, under a
file, in /proc; ``tests/test_out_dir.py`` has the rest). Flower's run is replaced by a function that fails the test
if it is reached."""

import pytest

from reports.cli import main


@pytest.fixture
def no_flower_run(monkeypatch):
    from attacks.probes.flower import FlowerAppProbe

    def reached(*args, **kwargs):
        raise AssertionError("the app's code or Flower started")

    monkeypatch.setattr(FlowerAppProbe, "observe", reached)
    monkeypatch.setattr(FlowerAppProbe, "run_once", reached)


@pytest.mark.parametrize("argv, words", [
    (["--canaries", "1"], "1 canaries are too few for the one-run estimators"),
    (["--canaries", "7"], "use at least 8"),
    (["--canaries", "10", "--confidence", "0.99"], "use at least 11"),
    (["--out", ""], "out: is empty"),
    (["--out", "", "--canaries", "20"], "out: is empty"),
    (["--out", "README.md/audit"], "which is a file, not a directory"),
    (["--out", "pyproject.toml"], "--out DIR writes DIR/report.json"),
    (["--out", "/proc/dpaudit/audit.json"], "out: cannot write"),
])
def test_refused_before_flower_starts(argv, words, no_flower_run, capsys):
    assert main(["flower", "tests/flower_apps/digits_dp", "--num-supernodes", "6", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


def test_minimum_canaries_is_where_the_ceiling_leaves_zero():
    """The least count whose all-correct one-run bound (confidence split over the two threat models) is positive:
    one fewer gives 0 (the estimator's own ceiling, checked on both sides)."""
    from attacks.estimators.one_run import one_run_ceiling
    from attacks.probes.flower_bounds import minimum_canaries

    for confidence in (0.9, 0.95, 0.99):
        least = minimum_canaries(1e-5, confidence)
        per_model = 1 - (1 - confidence) / 2
        assert one_run_ceiling(least, 1e-5, per_model) > 0 == one_run_ceiling(least - 1, 1e-5, per_model)


@pytest.mark.parametrize("count", [1, 3, 7, 11, 39])
def test_guess_counts_never_exceed_the_canaries(count):
    """Rounding 2 (m / 2) to even counts gave m + 1 for m = 3 mod 4 (39 canaries crashed after the run)."""
    from attacks.estimators.one_run_guesses import guess_rule_counts

    counts = guess_rule_counts(count)
    assert counts and max(counts) == count and min(counts) >= 1
