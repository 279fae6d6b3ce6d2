"""Issue 31, opacus-check 1-5, on set-ups written as an outside user writes them (tests/opacus_setup/
user_digits_mlp.py: an MLP on scikit-learn's digits, its own model and data, nothing of this repository).

Randomness: the set-ups seed torch; the noise test flags a correct optimizer with probability at most its
false-alarm 1e-6 (so each PASS below fails falsely with probability at most 1e-6 per check); 4 repetitions
per batch size (REPS, the CLI's default is 16) keep the file fast, with ~2400 noise coordinates each. Reference
values: opacus's own step count rule (int(epochs / sample_rate)), the dataset's construction (each record
repeated twice), dp-accounting's Poisson-subsampled and plain Gaussian PLDs.
"""

import dataclasses
import json
import math

import pytest
import torch
from dp_accounting import dp_event as dpe
from dp_accounting.pld import pld_privacy_accountant

from attacks.opacus_checks import epsilons as eps
from attacks.opacus_checks.check import check_opacus_setup, check_setup
from attacks.opacus_checks.load import build_setup
from attacks.opacus_checks.noise import measure_noise
from attacks.opacus_checks.parameters import parameters_outside
from attacks.opacus_checks.records import find_duplicates
from attacks.opacus_checks.sampler import read_loader
from reports.cli import main
from reports.commands.opacus_check import summary_lines

USER = "tests/opacus_setup/user_digits_mlp.py"
DIGITS = 1797
REPS = "4"


def _codes(result):
    return {f["code"]: f for f in result["findings"]}


def _check(spec, *flags):
    return main(["opacus-check", "--setup", spec, "--repetitions", REPS, *flags])


def _one_line_error(capsys, spec):
    assert _check(spec) == 2
    captured = capsys.readouterr()
    assert not captured.out and len(captured.err.strip().splitlines()) == 1
    return captured.err.strip()


# 1. BatchMemoryManager (logical batches of 256, physical ones of at most 64): a correct pattern, PASS


@pytest.mark.slow
def test_batch_memory_manager_passes_at_the_logical_step(tmp_path, capsys):
    out = tmp_path / "bmm"
    assert _check(f"{USER}:make_batch_memory_manager_setup", "--out", str(out)) == 0
    assert "verdict PASS" in capsys.readouterr().out
    result = json.loads((out / "report.json").read_text(encoding="utf-8"))
    s, noise = result["sampler"], result["noise"]
    logical = math.ceil(DIGITS / 256)  # opacus's DPDataLoader: len(batch_size 256 loader) steps, rate 1/len
    assert s["scheme"] == "poisson" and s["splitter_class"] == "BatchSplittingSampler"
    assert s["batches_per_epoch"] == s["loader_length"] == logical and s["max_physical_batch_size"] == 64
    assert s["physical_batches_per_epoch"] >= sum(math.ceil(b / 64) for b in s["batch_sizes"]) > logical
    assert noise["told_sample_rate"] == pytest.approx(1 / logical) == pytest.approx(s["poisson_rate"])
    assert result["steps"]["run"] == 2 * logical
    assert not noise["noise_flagged"] and noise["effective_noise_multiplier"] == pytest.approx(1.0, rel=0.15)
    assert not [f for f in result["findings"] if f["severity"] == "critical"]


def test_batch_memory_manager_reading_leaves_the_user_optimizer_as_it_was():
    """Reading the loader sends the splitter's skip signals to a stand-in; the noise measurement sets queued
    signals aside and splits its logical steps into physical batches of at most 64, as the manager does."""
    setup = build_setup(f"{USER}:make_batch_memory_manager_setup")
    optimizer = setup.optimizer
    facts = read_loader(setup.data_loader, optimizer)
    assert optimizer._step_skip_queue == [] and setup.data_loader.batch_sampler.optimizer is optimizer
    optimizer._step_skip_queue = [True, False]  # as if the user's loop stopped inside a logical batch
    seen = []
    hook = setup.model.register_forward_pre_hook(lambda module, inputs: seen.append(len(inputs[0])))
    try:
        noise = measure_noise(setup.model, optimizer, setup.privacy_engine, setup.data_loader.dataset,
                              repetitions=2, max_physical_batch_size=facts.max_physical_batch_size)
    finally:
        hook.remove()
    assert optimizer._step_skip_queue == [True, False] and not optimizer._is_last_step_skipped
    assert max(seen) <= 64 and max(a.batch_size for a in noise.at_batch) > 64
    assert not noise.noise_flagged


def test_batch_memory_manager_over_another_optimizer_is_a_bad_input(capsys):
    setup = build_setup(f"{USER}:make_batch_memory_manager_setup")
    setup.data_loader.batch_sampler.optimizer = torch.optim.SGD(setup.model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="BatchMemoryManager was given another optimizer"):
        read_loader(setup.data_loader, setup.optimizer)


# 2. a parameter the model trains outside the private optimizer: VIOLATION naming it


def test_parameter_outside_the_private_optimizer_is_a_violation_naming_it(tmp_path, capsys):
    out = tmp_path / "outside"
    assert _check(f"{USER}:make_bias_outside_setup", "--out", str(out)) == 1
    printed = capsys.readouterr().out
    assert "CRITICAL parameter-outside-private-optimizer" in printed and "out.bias (10 values)" in printed
    result = json.loads((out / "report.json").read_text(encoding="utf-8"))
    finding = _codes(result)["parameter-outside-private-optimizer"]
    assert finding["values"]["parameters"] == ["out.bias"] and result["verdict"] == "VIOLATION"
    assert result["rows"]["runs"]["epsilon"] == "inf"
    assert not result["noise"]["noise_flagged"]  # the other parameters' noise was still measured


def test_outside_parameters_are_compared_with_the_model_and_left_trainable():
    setup = build_setup(f"{USER}:make_bias_outside_setup")
    outside = parameters_outside(setup.model, setup.optimizer)
    assert [p.name for p in outside] == ["out.bias"]
    # measure_noise finds them itself when not told (a caller of the measurement alone never hits opacus's
    # "not compatible with grad accumulation" on the outside parameter's per-sample gradients)
    noise = measure_noise(setup.model, setup.optimizer, setup.privacy_engine, setup.data_loader.dataset,
                          repetitions=2)
    assert setup.model._module.out.bias.requires_grad and not noise.noise_flagged


def test_a_frozen_layer_outside_the_optimizer_is_not_a_finding():
    result = check_opacus_setup(f"{USER}:make_frozen_hidden_layer_setup", repetitions=int(REPS))
    assert "parameter-outside-private-optimizer" not in _codes(result) and result["verdict"] == "PASS"


# 3. what the accountant was told about steps: an assumption when not given


@pytest.mark.slow
def test_steps_not_given_are_said_to_be_assumed_and_accounted_epochs_finds_the_mismatch():
    """make_private_with_epsilon calibrated for 5 epochs, the loop runs 15: the printed check (the CLI's lines)
    says the steps are assumed; told accounted_epochs=5, it finds the mismatch."""
    setup = build_setup(f"{USER}:make_calibrated_5_runs_15_setup")
    facts = read_loader(setup.data_loader, setup.optimizer)
    noise = measure_noise(setup.model, setup.optimizer, setup.privacy_engine, setup.data_loader.dataset,
                          repetitions=int(REPS))
    assumed = check_setup(setup, facts, noise, 1e-5)
    printed = "\n".join(summary_lines(assumed))
    assert assumed["verdict"] == "PASS" and assumed["steps"]["accounted_from"] == "loop"
    assert "steps not told" in printed and "assumed to be the 435 the loop runs" in printed
    assert "INFO     steps-assumed" in printed and "pass accounted_epochs" in printed
    assert "435 steps; the loop runs" not in printed  # never shown as what the accountant was told
    told = check_setup(dataclasses.replace(setup, accounted_epochs=5), facts, noise, 1e-5)
    assert told["steps"]["accounted_from"] == "accounted_epochs" and "steps-assumed" not in _codes(told)
    assert told["steps"]["accounted"] == int(5 / noise.told_sample_rate)  # opacus's rule
    assert told["verdict"] == "VIOLATION" and _codes(told)["step-mismatch"]["severity"] == "critical"
    assert "(from accounted_epochs); the loop runs 435 steps" in "\n".join(summary_lines(told))


# 4. bad set-ups a user can write: one line, exit 2


def test_batchnorm_is_one_short_line_with_the_fix(capsys):
    err = _one_line_error(capsys, f"{USER}:make_batchnorm_setup")
    assert "BatchNorm" in err and "GroupNorm" in err and "ModuleValidator.fix" in err and len(err) < 400


def test_a_setup_function_taking_arguments_states_the_rule(capsys):
    err = _one_line_error(capsys, f"{USER}:make_setup_with_argument")
    assert "takes argument (epochs)" in err and "must take none" in err


# 5. the unit protected: one record; identical records found and said


def test_each_person_twice_is_found_and_said_per_record_not_per_person(capsys):
    assert _check(f"{USER}:make_each_person_twice_setup") == 0
    printed = capsys.readouterr().out
    assert "protects one record" in printed and "MEDIUM   duplicate-records" in printed
    assert "per record, not per person" in printed


def test_duplicate_counts_and_group_epsilon():
    setup = build_setup(f"{USER}:make_each_person_twice_setup")
    facts = find_duplicates(setup.data_loader.dataset)
    assert (facts.records, facts.duplicated, facts.groups, facts.max_copies) == (2 * DIGITS, DIGITS, DIGITS, 2)
    assert find_duplicates(build_setup(f"{USER}:make_setup").data_loader.dataset).duplicated == 0  # digits: none


class _Records(torch.utils.data.Dataset):
    """A dataset that is not a TensorDataset: read record by record."""

    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return torch.tensor(self.rows[i][0]), self.rows[i][1]


def test_duplicates_in_a_dataset_read_record_by_record_compare_every_field():
    rows = [([0.0, 1.0], 0), ([0.0, 1.0], 0), ([0.0, 1.0], 1), ([2.0, 3.0], 1), ([0.0, 1.0], 0)]
    facts = find_duplicates(_Records(rows))
    assert (facts.duplicated, facts.groups, facts.max_copies) == (2, 1, 3)  # the label differs in row 2


def _pld(event, delta=1e-5):
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def test_group_epsilon_against_dp_accounting_for_one_record_and_for_every_batch():
    """One record: dp-accounting's Poisson-subsampled Gaussian; two records in every batch (rate 1): a Gaussian
    of sensitivity 2 (z / 2). The grid (1e-2, pessimistic) keeps the figure within 1 % above."""
    one, _ = eps.group_poisson_epsilon(1, 0.02, 1.0, 100, 1e-5)
    reference = _pld(dpe.SelfComposedDpEvent(dpe.PoissonSampledDpEvent(0.02, dpe.GaussianDpEvent(1.0)), 100))
    assert reference <= one <= reference * 1.01
    both, _ = eps.group_poisson_epsilon(2, 1.0, 2.0, 10, 1e-5)
    assert both == pytest.approx(_pld(dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(1.0), 10)), rel=1e-2)
    two, _ = eps.group_poisson_epsilon(2, 0.02, 1.0, 100, 1e-5)
    assert two > 1.5 * one
