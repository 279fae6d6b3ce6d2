"""The dp-sgd target on opacus-check's dict whose loader yields dict batches (issues 39 item 5, 40 item 3):
``input_key``/``label_key`` in the target's parameters reach opacus-check's noise measurement and the gradient
canaries (tests/opacus_setup/batch_setups.py: 120 records of 8x8 images, a small conv net, Poisson 1/6, z = 1,
12 steps; 330 coordinates, so at most 60 canaries per run). Seeds fixed; a VIOLATION of these correct set-ups
would be a false alarm (probability at most 0.05 + 1e-6), and the outcome is deterministic."""

from __future__ import annotations

from pathlib import Path

import pytest

from accounting.errors import ConfigurationError
from reports.audit.config import parse_config
from reports.audit.runner import AuditOptions, plan_audit, run_audit

pytest.importorskip("opacus")
SETUPS = Path(__file__).resolve().parents[2] / "opacus_setup"
CONFIG = """
seed = 3
[[target]]
name = "dicts"
algorithm = "dp-sgd"
accountants = ["rdp"]
[target.parameters]
setup = "{setup}"
{extra}
[target.claim]
epsilon = 6.0
delta = 1e-5
neighbouring = "add-remove"
unit = "record"
[[target.probes]]
name = "dpsgd-all-iterates"
trials = 60
"""


def _config(setup: str, extra: str = ""):
    return parse_config(CONFIG.format(setup=setup, extra=extra), "x.toml", allow_code=True, base_dir=SETUPS)


def _audit(setup: str, extra: str = ""):
    options = AuditOptions(seed=3, executor="inprocess", progress=False, estimate=False)
    (result,) = run_audit(_config(setup, extra)["targets"], options, log=lambda message: None)
    return result


@pytest.mark.parametrize("setup, extra", [
    ("batch_setups.py:unknown_keys", 'input_key = "a"\nlabel_key = "b"'),  # named in the target's parameters
    ("batch_setups.py:dicts", ""),  # inferred: {"img", "label"}
])
def test_dict_batches_are_audited_through_the_users_loader(setup, extra):
    result = _audit(setup, extra)
    assert [p.outcome for p in result.probes] == ["ran"]
    assert result.verdict.status.value != "VIOLATION", result.verdict
    assert not [f for f in result.findings if f.id == "dpsgd-check" and f.severity == "critical"]


def test_the_probe_reads_the_same_canary_updates_from_dicts_as_from_tuples():
    """The gradient canaries through the user's sampler and optimizer: the same records as tuples and as dicts
    (keys from the target's parameters) give the same per-step updates, bit for bit."""
    import numpy as np

    from attacks.probes.dpsgd_user import load_user_setup, optimizer_gradient_canaries, with_batch_keys

    tuples = optimizer_gradient_canaries(load_user_setup(f"{SETUPS}/batch_setups.py:tuples"), 30, True, 11)
    dicts = with_batch_keys(load_user_setup(f"{SETUPS}/batch_setups.py:unknown_keys"), "a", "b")
    assert np.array_equal(optimizer_gradient_canaries(dicts, 30, True, 11), tuples)
    padded = optimizer_gradient_canaries(load_user_setup(f"{SETUPS}/batch_setups.py:padded_sequences"), 30, True, 11)
    assert padded.shape == (12, 30) and np.isfinite(padded).all()


@pytest.mark.parametrize("setup, extra, words", [
    ("batch_setups.py:unknown_keys", "", "parameters.setup: opacus-check: cannot read the model's input from a "
                                         "batch: it is a dict with keys 'a', 'b'"),
    ("batch_setups.py:unknown_keys", 'input_key = "img"', "input_key 'img' is not a key of the batches"),
    ("batch_setups.py:explicit_keys", 'input_key = "b"', "parameters.input_key: input_key 'b' differs from the "
                                                         "set-up dict's 'a'"),
    ("batch_setups.py:tuples", 'input_key = "img"', "input_key names a key of dict batches, but a batch is a list"),
    ("batch_setups.py:unknown_keys", "input_key = 5", "input_key"),
    ("batch_setups.py:unknown_keys", 'input_key = ["a", "a"]', "list of distinct keys"),
    ("../dpfed/user_dpsgd_setup.py:digits_mlp_setup", 'input_key = "x"', "a DpsgdSetup's data are tensors"),
    ("batch_setups.py:unknown_keys", 'inputkey = "a"', "inputkey"),
])
def test_bad_batch_keys_are_one_configuration_error(setup, extra, words):
    with pytest.raises(ConfigurationError) as caught:
        plan_audit(_config(setup, extra)["targets"], AuditOptions(estimate=False))
    assert words in str(caught.value) and "\n" not in str(caught.value)
