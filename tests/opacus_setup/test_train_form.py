"""The user's own DP-SGD training run as written and observed (``dpaudit opacus-check --train`` and the dp-sgd
target's ``train`` form), on an outside training (``tests/dpsgd_outside/train_digits.py``: its own loop, loader and
optimizers, nothing of ours inside) with one planted bug per function.

References are independent of the code under test: the composed epsilon of the steps that ran is checked against
dp-accounting's own PLD accountant composing the same Poisson-subsampled Gaussian events, and the noise ratio of the
half-noise plant is the closed form 1/2. The noise test is a lower-tail chi-square at 1e-3 over about 1.4e5
coordinates: a correct training fails it with probability below 1e-3, and the training is seeded, so the outcome is
the same every run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.cli import main

TRAIN = Path(__file__).resolve().parents[1] / "dpsgd_outside" / "train_digits.py"


def check(tmp_path, function: str, *argv) -> tuple[int, dict]:
    out = tmp_path / function
    code = main(["opacus-check", "--train", f"{TRAIN}:{function}", *argv, "--out", str(out)])
    return code, json.loads((out / "report.json").read_text())


def critical(result: dict) -> set[str]:
    return {f["code"] for f in result["findings"] if f["severity"] == "critical"}


def test_correct_training_passes_and_its_steps_are_composed_as_dp_accounting_does(tmp_path):
    from dp_accounting import dp_event, pld

    code, result = check(tmp_path, "train")
    assert code == 0 and not critical(result), result["findings"]
    rows = result["rows"]
    assert rows["steps"] == 58 and rows["counted_steps"] == 58 and rows["poisson"] and rows["engines"] == 1
    [z], [q] = rows["noise_multipliers"], rows["sample_rates"]
    accountant = pld.PLDAccountant()
    accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(z)), 58)
    assert rows["epsilon"] == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-3)
    assert result["claim"] == pytest.approx(rows["reported_epsilon"]) and rows["reported_epsilon"] <= 3.0


@pytest.mark.parametrize("function, argv, code", [
    ("train_half_noise", [], "noise-below-accounted"),
    ("train_half_noise_toggled", [], "noise-below-accounted"),  # z halved only inside add_noise (a user's plant)
    ("train_more_epochs", ["--claimed-epsilon", "3"], "claim-below-steps"),
    ("train_head_outside", [], "parameter-outside-private-optimizer"),
    ("train_shuffled", [], "not-poisson"),
    ("train_duplicated", ["--unit", "user"], "user-level-epsilon"),
])
def test_each_planted_bug_is_a_violation_naming_it(tmp_path, function, argv, code):
    exit_code, result = check(tmp_path, function, *argv)
    assert exit_code == 1 and code in critical(result), result["findings"]
    if code == "noise-below-accounted":
        [finding] = [f for f in result["findings"] if f["code"] == code]
        assert finding["values"]["ratio"] == pytest.approx(0.5, abs=0.01)
    if code == "parameter-outside-private-optimizer":  # the head's weight and bias
        assert len([f for f in result["findings"] if f["code"] == code]) == 2


def test_more_epochs_without_a_claim_is_what_the_engine_counted(tmp_path):
    """Trained 4 epochs against the 2 it was calibrated for: opacus's own accountant counted all 116 steps, so the
    epsilon it reports (3.8) is the one tested, and it holds; the claim of 3 (as written in a configuration) fails."""
    code, result = check(tmp_path, "train_more_epochs")
    assert code == 0 and result["rows"]["steps"] == 116 and result["claim"] > 3.5


def test_duplicates_count_only_under_a_user_claim(tmp_path):
    code, result = check(tmp_path, "train_duplicated")
    assert code == 0 and "user-level-epsilon" not in {f["code"] for f in result["findings"]}


@pytest.mark.parametrize("argv, words", [
    (["--train", f"{TRAIN}:train", "--setup", f"{TRAIN}:train"], "not allowed with argument"),
    (["--setup", f"{TRAIN}:train", "--argv", "--x 1"], "applies to --train only"),
    (["--setup", f"{TRAIN}:train", "--unit", "user"], "applies to --train only"),
    (["--setup", f"{TRAIN}:train", "--canaries", "100"], "applies to --train only"),
    (["--train", f"{TRAIN}:train", "--canaries", "3"], "too few for the one-run estimators"),
    (["--train", f"{TRAIN}:train", "--user-key", "1"], "give --unit user too"),
    (["--train", f"{TRAIN}:nothing"], "nothing"),
    (["--train", f"{TRAIN}:_train", "--argv", "'unclosed"], "cannot split"),
])
def test_bad_train_arguments_exit_2_with_one_line(argv, words, capsys):
    try:
        code = main(["opacus-check", *argv])
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1, err


def test_canaries_through_the_users_optimizer_give_a_one_run_bound(tmp_path):
    """1000 gradient canaries join the training's own private steps: a one-run bound (rigorous, 95%) that stays below
    the claim on the correct training (the estimator's guarantee: exceeding the true epsilon has probability <= 5%;
    this seed's outcome is fixed)."""
    code, result = check(tmp_path, "train", "--canaries", "1000", "--seed", "1")
    assert code == 0
    [finding] = [f for f in result["findings"] if f["code"] == "canary-bound"]
    assert 0 <= finding["values"]["lower_bound"] < result["claim"]
    assert result["canaries"]["steps"] == 58 and result["canaries"]["canaries"] == 1000


def test_the_noise_tests_stated_power_is_its_refutation_rate():
    """``noise_power``'s closed form against simulation: noise at the stated ratio of the accounted std is refuted in
    about 90% of 4,000 simulated measurements of 1,000 coordinates (binomial sd 0.5%; 5 sd allowed: false failure
    below 1e-6)."""
    import numpy as np
    from scipy import stats

    from attacks.opacus_checks.observed_noise import noise_power

    record = {"noise": [{"expected_std": 2.0, "count": 1000, "sum_squares": 0.0}]}
    power = noise_power(record, alpha=1e-3)
    rng = np.random.default_rng(11)
    noise = rng.normal(0, 2.0 * power["refuted_ratio"], size=(4000, 1000))
    p_values = stats.chi2.cdf(np.sum(noise ** 2, axis=1) / 4.0, df=1000)
    assert np.mean(p_values < 1e-3) == pytest.approx(0.9, abs=0.025)


def test_a_user_key_function_names_each_records_user(tmp_path):
    """``--user-key FILE.py:FUNCTION`` gets the dataset and returns one user id per record: 3,594 records (every
    digit twice) as 1,797 users of two records each: the group epsilon of 2 records, as identical records gave."""
    users = tmp_path / "users.py"
    users.write_text("def user_ids(dataset):\n    return [i % (len(dataset) // 2) for i in range(len(dataset))]\n")
    code, result = check(tmp_path, "train_duplicated", "--unit", "user", "--user-key", f"{users}:user_ids")
    [finding] = [f for f in result["findings"] if f["code"] == "user-level-epsilon"]
    assert code == 1 and finding["values"]["max_records"] == 2 and finding["severity"] == "critical"
