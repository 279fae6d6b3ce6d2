"""``dpaudit attack``: output formats, exit codes by verdict, one-line errors (exit 2) on bad input.

Verdicts are random but seeded, so each test is deterministic. For a random seed: the correct Gaussian
mechanism is called VIOLATION with probability <= 0.05 (the rigorous bound's confidence; 0 of 40 other
seeds); the planted weak noise is certified at 7.56-7.8 against a claim of 2 (40 other seeds), so missing
it has negligible probability.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.cli import main

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
DATASETS = str(CONFIGS / "attack_user_example_datasets.toml")


def noisy_text(dataset, rng):
    """A user mechanism returning non-numeric output (for the error test)."""
    return "not a number"


def test_json_output_and_pass_exit_code(capsys):
    code = main(["attack", "gaussian", "--trials", "20000", "--seed", "1", "--format", "json", "--no-progress"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["verdict"]["status"] == "PASS"
    assert out["trials_per_world"] == 20000 and out["claim"]["epsilon"] == pytest.approx(2.0)
    assert {b["method"] for b in out["bounds"]} >= {"clopper-pearson"}
    assert 0.5 < out["roc"]["auc"] < 1.0


def test_table_output_and_violation_exit_code(capsys):
    code = main(["attack", "bug-weak-noise", "--trials", "20000", "--seed", "2", "--claim-epsilon", "2"])
    text = capsys.readouterr().out
    assert code == 1 and "VIOLATION" in text and "clopper-pearson" in text


def test_inconclusive_exit_code(capsys):
    # 100 trials per world cannot certify more than about 3.3 at delta 1e-5 (planner ceiling).
    code = main(["attack", "gaussian", "--trials", "100", "--seed", "3", "--claim-epsilon", "8"])
    assert code == 3 and "INCONCLUSIVE" in capsys.readouterr().out


def test_user_mechanism_from_the_command_line(capsys):
    code = main(
        [
            "attack",
            "--mechanism",
            "attacks.probes.examples:leaky_count",
            "--datasets",
            DATASETS,
            "--trials",
            "20000",
            "--seed",
            "4",
            "--claim-epsilon",
            "1",
            "--format",
            "json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["training_trials_per_world"] == 10000 and out["trials_per_world"] == 10000


def test_config_file_and_params(capsys, tmp_path):
    config = tmp_path / "a.toml"
    config.write_text('probe = "subsampled-gaussian"\ntrials = 2000\nseed = 5\n[params]\nrounds = 2\n')
    code = main(["attack", "--config", str(config), "--param", "noise_multiplier=3", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["probe"]["params"]["rounds"] == 2
    assert out["probe"]["params"]["noise_multiplier"] == 3


@pytest.mark.parametrize(
    "name",
    ["attack_fts_server.toml", "attack_fts_server_reference.toml", "attack_gaussian.toml", "attack_planted_bugs.toml"],
)
def test_shipped_configs_parse(name):
    from reports.commands.attack import build_probe, load_config

    config = load_config(str(CONFIGS / name))
    build_probe({**config, "params": config.get("params", {})})


@pytest.mark.parametrize(
    "argv, field",
    [
        (["gaussian", "--trials", "0"], "trials"),
        (["gaussian", "--trials", "2.5"], "trials"),
        (["gaussian", "--confidence", "1.5"], "confidence"),
        (["gaussian", "--confidence", "0"], "confidence"),
        (["no-such-probe"], "probe"),
        (["gaussian", "--param", "colour=red"], "params.colour"),
        (["--mechanism", "no_such_module_xyz:f", "--datasets", DATASETS], "mechanism"),
        (["--mechanism", "tests.attacks.test_attack_cli:noisy_text", "--datasets", DATASETS], "mechanism"),
        (["--mechanism", "attacks.probes.examples:laplace_count"], "mechanism"),
        (["gaussian", "--checkpoint", "/proc/no/such/dir"], "checkpoint"),
        (["gaussian", "--fresh"], "fresh"),  # nothing to discard: the flag was silently ignored
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, argv, field):
    code = main(["attack", *argv, "--trials" if "--trials" not in argv else "--seed", "10"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and f"error: {field}" in err


def test_list_probes(capsys):
    assert main(["attack", "--list"]) == 0
    assert "fts-server" in capsys.readouterr().out
