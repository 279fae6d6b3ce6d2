"""Options given twice are refused (argparse alone keeps the last value silently), and a closed stdout ends
the command quietly with the shell's SIGPIPE code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reports.cli import build_parser, main

PLAN = ["plan", "--trials", "1000", "--delta", "1e-5"]


@pytest.mark.parametrize("argv, given", [
    (PLAN + ["--trials", "2000"], "--trials"),
    (["plan", "--trials=1000", "--delta", "1e-5", "--trials=1000"], "--trials"),  # same value twice too
    (["plan", "--trials", "1000", "--delta", "1e-5", "--tri", "5"], "--trials"),  # an abbreviation
    (PLAN + ["--format", "json", "--format", "table"], "--format"),
    (["--debug", "--debug"] + PLAN, "--debug"),
    (["attack", "--config", "a.toml", "--config", "b.toml"], "--config"),
    (["account", "--rate", "0.1", "--noise", "1", "--steps", "10", "--delta", "1e-5", "--rate", "1"], "--rate"),
])
def test_an_option_given_twice_is_one_line_and_exit_2(capsys, argv, given):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert f"{given} given more than once" in err


def test_once_each_still_parses_and_the_repeatable_param_still_repeats():
    parser = build_parser()
    args = parser.parse_args(PLAN + ["--format", "json"])
    assert args.format == "json" and float(args.trials) == 1000
    args = parser.parse_args(["attack", "gaussian", "--param", "a=1", "--param", "b=2"])
    assert args.param == ["a=1", "b=2"]
    # the parser is reusable: a second parse does not remember the first one's options
    assert parser.parse_args(PLAN).delta is not None


def test_a_closed_stdout_exits_141_without_a_traceback_or_log(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    reader_gone = subprocess.Popen([sys.executable, "-m", "reports.cli", *PLAN, "--format", "json"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    reader_gone.stdout.close()  # like `| head -0`: the reader leaves before anything is written
    err = reader_gone.stderr.read().decode()
    assert reader_gone.wait(timeout=120) == 141, err
    assert err == ""
    assert not list(tmp_path.glob("dpaudit-error-*.log"))


@pytest.mark.parametrize("probe, key", [("gaussian", "calibration=classic"), ("gaussian", "epsilon=1"),
                                        ("bug-weak-noise", "epsilon=1")])
def test_a_gaussian_calibration_beside_an_explicit_noise_is_refused(capsys, probe, key):
    """``epsilon`` and ``calibration`` only choose a Gaussian probe's noise; beside ``noise_multiplier`` they
    were silently ignored (``--param calibration=classic --param noise_multiplier=2`` ran at z = 2)."""
    argv = ["attack", probe, "--trials", "1000", "--param", key, "--param", "noise_multiplier=2"]
    assert main(argv) == 2
    name = key.split("=")[0]
    assert f"params.{name}: calibrates the noise" in capsys.readouterr().err
