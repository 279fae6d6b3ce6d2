"""Where the data of each non-private optimizer step came from, in the ``train`` form (``dpaudit opacus-check
--train`` and an audit configuration's ``train = "file.py:function"``), on outside trainings written as opacus's
docs and examples write them (``tests/dpsgd_outside/train_gan.py``, ``train_pretrain.py``; nothing of ours inside)
and on opacus's own ``examples/dcgan.py`` (``tests/dpsgd_examples``, data replaced).

Expected verdicts are the definition of post-processing, not outputs of the code under test: a plain step computed
only from generated data, a separate public data set or a private model's outputs on them leaves the epsilon
unchanged (PASS, an info finding naming it); a plain step computed from the private records, before or after
``make_private`` and by any optimizer, has no finite epsilon (VIOLATION naming the parameters). The claims written
in the configurations (5) lie above the epsilon of the private steps that ran, so only the data premise decides.
The noise test runs too (chi-square at 1e-3 on seeded trainings: a fixed outcome, false failure below 1e-3).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.cli import main

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE, EXAMPLES = ROOT / "dpsgd_outside", ROOT / "dpsgd_examples"
DCGAN_ARGV = ["--data-root", "unused", "--device", "cpu", "--workers", "0", "--batch-size", "16", "--nz", "8",
              "--ngf", "8", "--ndf", "8", "--epochs", "1", "--manualSeed", "1"]
CASES = [  # (training, argv, verdict, the plain steps' data, before make_private)
    (OUTSIDE / "train_gan.py:train", [], "PASS", "other", False),
    (OUTSIDE / "train_gan.py:train_discriminator_stepped_plainly", [], "VIOLATION", "private", False),
    (OUTSIDE / "train_pretrain.py:train_public_pretraining", [], "PASS", "other", True),
    (OUTSIDE / "train_pretrain.py:train_public_pretraining_same_optimizer", [], "PASS", "other", True),
    (OUTSIDE / "train_pretrain.py:train_private_warmup", [], "VIOLATION", "private", True),
    (OUTSIDE / "train_pretrain.py:train_private_warmup_same_optimizer", [], "VIOLATION", "private", True),
    (OUTSIDE / "train_pretrain.py:train_private_warmup_tensors", [], "VIOLATION", "private", True),
    (EXAMPLES / "run_dcgan.py:main", DCGAN_ARGV, "PASS", "other", False),
]
IDS = [str(c[0]).rpartition("/")[2] for c in CASES]


def _argv(argv, tmp_path):
    return [*argv, "--outf", str(tmp_path)] if argv is DCGAN_ARGV else list(argv)


@pytest.mark.slow
@pytest.mark.parametrize("spec, argv, verdict, data, before", CASES, ids=IDS)
def test_opacus_check_train(tmp_path, monkeypatch, spec, argv, verdict, data, before):
    import shlex

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "check"
    code = main(["opacus-check", "--train", str(spec), "--argv", shlex.join(_argv(argv, tmp_path)), "--out", str(out),
                 "--no-progress"])
    result = json.loads((out / "report.json").read_text())
    assert result["verdict"] == verdict and code == (0 if verdict == "PASS" else 1), result["findings"]
    groups = result["observed"]["plain_steps"]
    assert groups and any(g["data"] == data and g["before_make_private"] == before for g in groups), groups
    codes = {f["code"]: f["severity"] for f in result["findings"]}
    if verdict == "PASS":
        assert codes.get("post-processing") == "info" and "parameter-outside-private-optimizer" not in codes
        assert "plain-step-data-not-observed" not in codes
    else:
        named = [f for f in result["findings"] if f["code"] == "parameter-outside-private-optimizer"]
        assert named and all(f["severity"] == "critical" for f in named)
        assert {f["values"]["before_make_private"] for f in named} == {before}


@pytest.mark.slow
@pytest.mark.parametrize("spec, argv, verdict, data, before", CASES, ids=IDS)
def test_audit_train_form(tmp_path, monkeypatch, spec, argv, verdict, data, before):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "audit.toml"
    config.write_text(f'''title = "data paths"
seed = 0

[[target]]
name = "{spec.name}"
algorithm = "dp-sgd"
accountants = ["pld"]
[target.parameters]
train = {json.dumps(str(spec))}
argv = {json.dumps(_argv(argv, tmp_path))}
[target.claim]
epsilon = 5.0
delta = 1e-5
neighbouring = "add-remove"
unit = "one record"
''')
    exit_code = main(["audit", str(config), "--allow-code", "--out", str(tmp_path / "out")])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    [target] = report["targets"]
    assert target["verdict"]["status"] == verdict and exit_code == (0 if verdict == "PASS" else 1)
    checks = [f for f in target["findings"] if f["id"] == "dpsgd-check"]
    codes = {f["values"].get("code"): f["severity"] for f in checks}
    if verdict == "PASS":
        assert codes.get("post-processing") == "info" and "parameter-outside-private-optimizer" not in codes
    else:
        assert codes.get("parameter-outside-private-optimizer") == "critical"
