"""opacus's other documented paths (``tests/dpsgd_outside/train_paths.py``: ghost clipping, functorch per-sample
gradients, ``make_private_with_epsilon``; written as opacus's documentation writes them, nothing of ours inside), run
as written through ``dpaudit opacus-check --train`` and an audit configuration's ``train = "file.py:function"``: each
gets its right verdict from both, and no path of the train form fails on a training that never asks for its epsilon.

References independent of the code under test: the epsilon of the steps that ran is dp-accounting's PLD accountant
composing the same Poisson-subsampled Gaussian events; the half-noise plant's measured ratio is the closed form 1/2;
the claim of ``make_private_with_epsilon`` is the ``target_epsilon`` written in the training file; a clip raised 3
times while opacus clips gives a record's share of the sum above C and at most 3 C. The noise test is a
lower-tail chi-square at 1e-3 over about 1e4 coordinates: a correct training fails it with probability below 1e-3;
every training is seeded, so each outcome is the same every run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.cli import main

OUTSIDE = Path(__file__).resolve().parents[1] / "dpsgd_outside"
TRAIN = OUTSIDE / "train_paths.py"
TARGET_EPSILON = 3.0  # train_paths.py's target_epsilon, as its author wrote it


def check(tmp_path, function: str, *argv) -> tuple[int, dict]:
    out = tmp_path / function
    code = main(["opacus-check", "--train", f"{TRAIN}:{function}", "--no-progress", *argv, "--out", str(out)])
    return code, json.loads((out / "report.json").read_text())


def critical(result: dict) -> set[str]:
    return {f["code"] for f in result["findings"] if f["severity"] == "critical"}


def pld_epsilon(rows: dict) -> float:
    from dp_accounting import dp_event, pld

    [z], [q] = rows["noise_multipliers"], rows["sample_rates"]
    accountant = pld.PLDAccountant()
    accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(z)), rows["steps"])
    return accountant.get_epsilon(rows["delta"])


@pytest.mark.slow
@pytest.mark.parametrize("function, exit_code, code", [
    ("ghost", 0, None),
    ("ghost_half_noise", 1, "noise-below-accounted"),
    ("functorch", 0, None),
    ("more_epochs_than_asked", 1, "claim-below-steps"),
    ("clip_raised", 1, "clip-exceeded"),
])
def test_each_path_gets_its_verdict_from_opacus_check(tmp_path, function, exit_code, code):
    got, result = check(tmp_path, function)
    rows = result["rows"]
    assert got == exit_code and critical(result) == ({code} if code else set()), result["findings"]
    assert rows["steps"] == rows["counted_steps"] and rows["steps"] in (16, 32)  # 8 batches per epoch, 2 or 4 epochs
    assert rows["epsilon"] == pytest.approx(pld_epsilon(rows), rel=1e-3)
    if code == "noise-below-accounted":
        [finding] = [f for f in result["findings"] if f["code"] == code]
        assert finding["values"]["ratio"] == pytest.approx(0.5, abs=0.02)
    if code == "clip-exceeded":  # clipped at 3 C, noised at C: a share above C, at most 3 C (closed form)
        [finding] = [f for f in result["findings"] if f["code"] == code]
        assert 1.0 < finding["values"]["worst_ratio"] <= 3.0 * (1 + 1e-4)
    observed = {p["premise"]: p["observed"] for p in result["premises"]}
    assert observed["clipping"] == (function not in ("ghost", "ghost_half_noise", "clip_raised"))  # ghost: no
    assert observed["multiplicity"]  # each step's backward passes and the Poisson batches drawn both counted
    assert observed["updates"]  # no plain optimizer step, so no data whose origin was not established
    assert observed["accounting"] and observed["claim"]
    if function == "more_epochs_than_asked":  # nothing printed: the target it asked make_private_with_epsilon for
        assert result["claim"] == TARGET_EPSILON and "make_private_with_epsilon" in result["claim_source"]
        assert rows["reported_epsilon"] is None and rows["epsilon"] > TARGET_EPSILON * 1.2


@pytest.mark.slow
def test_each_path_gets_its_verdict_from_an_audit_configuration(tmp_path):
    """The same trainings as ``train = "train_paths.py:function"`` targets, and one trained as asked that never asks
    for its epsilon (the audit formerly stopped on it with an internal error)."""
    code = main(["audit", str(OUTSIDE / "audit_train_paths.toml"), "--allow-code", "--no-progress", "--out",
                 str(tmp_path / "out")])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    statuses = {t["parameters"]["setup"].rpartition(":")[2]: t["verdict"]["status"] for t in report["targets"]}
    assert code == 1 and statuses == {"ghost": "PASS", "ghost_half_noise": "VIOLATION", "functorch": "PASS",
                                      "more_epochs_than_asked": "VIOLATION", "as_asked": "PASS",
                                      "clip_raised": "VIOLATION"}
    codes = {t["parameters"]["setup"].rpartition(":")[2]: {f["values"].get("code") for f in t["findings"]
                                                           if f["severity"] == "critical"} for t in report["targets"]}
    assert codes["ghost_half_noise"] == {"noise-below-accounted"} and codes["more_epochs_than_asked"] == {
        "claim-below-steps"}
    assert codes["clip_raised"] == {"clip-exceeded"}


@pytest.mark.slow
@pytest.mark.parametrize("function, argv, claim", [
    ("silent", [], None),  # no claim anywhere: none tested, none invented
    ("as_asked", [], TARGET_EPSILON),  # make_private_with_epsilon's target
    ("as_asked", ["--claim-epsilon", "2.5"], 2.5),  # the claim given wins over the target
    ("silent", ["--canaries", "400", "--seed", "3"], None),
    ("silent", ["--unit", "user"], None),
])
def test_every_path_of_the_train_form_runs_a_training_that_never_asks_for_its_epsilon(tmp_path, function, argv,
                                                                                       claim):
    got, result = check(tmp_path, function, *argv)
    assert result["rows"]["reported_epsilon"] is None and result["claim"] == claim
    below = claim is not None and claim < result["rows"]["epsilon"]
    assert got == (1 if below else 0) and (("claim-below-steps" in critical(result)) == below), result["findings"]


def test_an_accountant_that_missed_steps_is_named_without_a_reported_epsilon():
    from attacks.opacus_checks.observed import _steps_findings

    rows = {"steps": 20, "counted_steps": 10, "epsilon": 2.0, "opacus_rdp": 2.2, "reported_epsilon": None}
    [finding] = _steps_findings(rows, None, "no claim")
    assert finding.code == "accountant-missed-steps" and "never asked for" in finding.message


def test_the_claim_comes_from_where_the_user_made_it():
    """Given claim, then the training's own last figure, then make_private_with_epsilon's target, else none."""
    from attacks.opacus_checks.observed import claim_of

    steps = [{"count": 4}]
    target = {"target_epsilon": 3.0, "target_delta": 1e-6, "epochs": 2, "sample_rate": 0.5}
    printed = {"epsilon": 3.8, "delta": 1e-5, "after_steps": 4}
    record = {"steps": steps, "engines_made": [target], "epsilons": [printed]}
    assert claim_of(record, 2.0, 1e-5)[:2] == (2.0, 1e-5)
    assert claim_of(record, None, 1e-5)[:2] == (3.8, 1e-5)
    assert claim_of({**record, "epsilons": []}, None, 1e-5)[:2] == (3.0, 1e-6)
    assert claim_of({**record, "epsilons": [], "engines_made": [{}]}, None, 1e-5)[:2] == (None, 1e-5)


def test_a_premise_is_observed_only_where_the_record_shows_it():
    """Premises read from the record: clipping verified at every noised sum; plain steps' data all established;
    backward passes no more than the Poisson batches drawn; the accountant's history and the noise; a claim."""
    from attacks.opacus_checks.premises import premises

    rows = {"steps": 4, "counted_steps": 4}
    record = {"steps": [{"count": 4}], "noise": [{"count": 10, "expected_std": 1.0, "sum_squares": 10.0}],
              "clipping": {"verified": 4, "unverified": 0, "exceeded": 0}}
    seen = {p["premise"]: p["observed"] for p in premises(record, rows, "the claimed epsilon")}
    assert seen == {"updates": False, "clipping": True, "multiplicity": False, "accounting": True, "claim": True}
    full = {**record, "steps": [{"count": 4, "accumulated": 1}], "batches_drawn": 4,
            "plain_steps": [{"data": "other", "steps": 3}]}
    assert all(p["observed"] for p in premises(full, rows, "the claimed epsilon"))
    for changed in ({"batches_drawn": 3}, {"plain_steps": [{"data": "not established", "steps": 1}]},
                    {"clipping": {"verified": 3, "unverified": 1, "exceeded": 0}}):
        assert not all(p["observed"] for p in premises({**full, **changed}, rows, "the claimed epsilon")), changed
    assert not all(p["observed"] for p in premises(full, {"steps": 4, "counted_steps": 3}, "the claimed epsilon"))
    assert not all(p["observed"] for p in premises(full, rows, "no claim (none given)"))
