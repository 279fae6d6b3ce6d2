"""The set-up forms (``dpaudit opacus-check --setup`` and an audit configuration's ``setup = "file.py:function"``)
check the premises the train form checks, on set-ups written as opacus users write them
(``tests/dpsgd_outside/setup_premises.py``): a claim of 3 for a set-up made with
``make_private_with_epsilon(target_epsilon=3, epochs=1)`` whose loop runs 2 epochs is a VIOLATION in both (the
reference: dp-accounting's PLD of the steps the loop runs, above 3), and a head trained by a second, plain optimizer
is named, not refused with opacus's message. The noise measurement runs at its default false alarm (1e-6; seeded).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.cli import main

SETUPS = Path(__file__).resolve().parents[1] / "dpsgd_outside" / "setup_premises.py"


def _config(tmp_path, function: str, claim: float) -> Path:
    config = tmp_path / "audit.toml"
    config.write_text(f'''title = "set-up premises"
seed = 0

[[target]]
name = "{function}"
algorithm = "dp-sgd"
accountants = ["pld"]
[target.parameters]
setup = {json.dumps(f"{SETUPS}:{function}")}
canaries_per_run = 200
[target.claim]
epsilon = {claim}
delta = 1e-5
neighbouring = "add-remove"
unit = "one record"

[[target.probes]]
name = "dpsgd-one-run"
trials = 200
''')
    return config


@pytest.mark.slow
def test_a_claim_for_fewer_epochs_than_run_is_a_violation_in_opacus_check(tmp_path):
    from dp_accounting import dp_event, pld

    out = tmp_path / "check"
    code = main(["opacus-check", "--setup", f"{SETUPS}:make_setup_run_longer", "--claim-epsilon", "3",
                 "--out", str(out), "--no-progress"])
    result = json.loads((out / "report.json").read_text())
    z, q, steps = (result["noise"]["told_noise_multiplier"], result["noise"]["told_sample_rate"],
                   result["steps"]["run"])
    accountant = pld.PLDAccountant()
    accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(z)), steps)
    assert steps == 58 and accountant.get_epsilon(1e-5) > 3.0 * 1.01
    assert code == 1 and result["verdict"] == "VIOLATION" and result["reported_epsilon"] == 3.0
    assert any(f["severity"] == "critical" for f in result["findings"])


@pytest.mark.slow
@pytest.mark.parametrize("function", ["make_setup_head_plain", "make_setup_head_in_module"])
def test_a_head_trained_by_a_plain_optimizer_is_named_in_opacus_check(tmp_path, function):
    """Named, not refused: with the head inside make_private's module opacus's per-sample hooks used to fail the
    noise measurement ('No activations detected for Linear', exit 2)."""
    out = tmp_path / "check"
    code = main(["opacus-check", "--setup", f"{SETUPS}:{function}", "--out", str(out), "--no-progress"])
    result = json.loads((out / "report.json").read_text())
    [finding] = [f for f in result["findings"] if f["code"] == "parameter-outside-private-optimizer"]
    assert code == 1 and finding["severity"] == "critical" and finding["values"]["parameters"] == ["1.weight", "1.bias"]


@pytest.mark.slow
@pytest.mark.parametrize("function, code", [("make_setup_run_longer", None),
                                            ("make_setup_head_plain", "parameter-outside-private-optimizer"),
                                            ("make_setup_head_in_module", "parameter-outside-private-optimizer")])
def test_the_audit_set_up_form_gives_the_same_verdict(tmp_path, monkeypatch, function, code):
    monkeypatch.chdir(tmp_path)
    exit_code = main(["audit", str(_config(tmp_path, function, 3.0)), "--allow-code", "--out", str(tmp_path / "out")])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    [target] = report["targets"]
    critical = {f["values"].get("code") for f in target["findings"] if f["severity"] == "critical"}
    assert target["verdict"]["status"] == "VIOLATION" and exit_code == 1, target["findings"]
    assert critical and (code is None or code in critical)
