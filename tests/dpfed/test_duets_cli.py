"""``dpaudit run duets|dp-duets|diskernelucb``: outputs, privacy report, bad input (exit code 2)."""

import json
import math

import pytest
from scipy import optimize, stats

from reports.cli import main

FAST = ["--horizon", "20", "--num-agents", "3"]


def test_duets_prints_regret_and_communication_and_writes_json_and_plots(tmp_path, capsys):
    code = main(["run", "duets", "--objective", "hartmann4", *FAST, "--runs", "2", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "cumulative regret" in out and "communication" in out and "not private" in out
    data = json.loads((tmp_path / "duets_duets_hartmann4.json").read_text())
    assert len(data["regret_mean"]) == 20 and len(data["runs"]) == 2 and data["privacy"] is None
    assert data["communication_rounds"] == [3, 3]
    for suffix in ("regret", "communication"):
        assert (tmp_path / f"duets_duets_hartmann4_{suffix}.png").read_bytes()[:4] == b"\x89PNG"


def test_dp_duets_reports_every_release_and_the_accountants(tmp_path, capsys):
    code = main(
        ["run", "dp-duets", *FAST, "--noise-multiplier", "2", "--accountants", "exact,rdp", "--out", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert code == 0 and "3 subsampled-Gaussian release(s)" in out
    privacy = json.loads((tmp_path / "duets_dp-duets_branin_agent.json").read_text())["privacy"]
    assert privacy["releases"] == 3 and [a["name"] for a in privacy["accounting"]] == ["exact", "rdp"]
    # three full-rate releases at z = 2 compose to a Gaussian with mu = sqrt(3)/2; its epsilon at delta 1e-5
    # from Balle & Wang's profile solved with scipy (was the pasted 3.7086, which this reproduces)
    mu = math.sqrt(3) / 2
    profile = lambda e: stats.norm.cdf(mu / 2 - e / mu) - math.exp(e) * stats.norm.cdf(-mu / 2 - e / mu)  # noqa: E731
    exact = optimize.brentq(lambda e: profile(e) - 1e-5, 0.0, 50.0)
    assert privacy["accounting"][0]["epsilon"] == pytest.approx(exact, abs=1e-3)


def test_diskernelucb_and_config_file(tmp_path, capsys):
    config = tmp_path / "c.toml"
    config.write_text('objective = "cosine"\nnum_agents = 3\nhorizon = 15\nthreshold = 2.0\nruns = 2\n')
    assert main(["run", "diskernelucb", "--config", str(config), "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "duets_diskernelucb_cosine.json").read_text())
    assert data["options"]["threshold"] == 2.0 and len(data["runs"]) == 2


@pytest.mark.parametrize(
    "argv, config_text",
    [
        (["run", "duets", "--horizon", "0"], None),
        (["run", "duets", "--beta", "loose"], None),
        (["run", "dp-duets", "--unit", "reward", "--rate", "0.5"], None),
        (["run", "duets"], "horizon = 10\ntypo = 1\n"),
        (["run", "duets"], "threshold = 3\n"),
        (["run", "duets", "--runs", "0"], None),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, config_text):
    if config_text is not None:
        path = tmp_path / "bad.toml"
        path.write_text(config_text)
        argv = [*argv, "--config", str(path)]
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "error" in err


@pytest.mark.parametrize(
    "algorithm, config_text, field",
    [
        ("dp-duets", "horizon = 1000000\n[duets]\nhorizon = 5\n", "horizon"),  # beside [duets]: was ignored
        ("dp-duets", "runs = 3\n[duets]\nhorizon = 5\n", "runs"),  # likewise
        ("dp-duets", 'horizon = "10"\n', "horizon"),  # a number from a string: was read
        ("dp-duets", 'rate = "0.5"\n', "rate"),
        ("dp-duets", "horizon = 10.0\n", "horizon"),  # a whole number as a float: was read
        ("dp-duets", 'runs = "2"\n', "runs"),
        ("dp-duets", "duets = 5\n", "duets"),  # was a TypeError, exit 4
        ("duets", "horizon = 10\nnoise_multiplier = 2.0\n", "noise_multiplier"),  # duets adds no noise: was ignored
        ("diskernelucb", "horizon = 10\nrate = 0.5\n", "rate"),
        ("diskernelucb", 'horizon = 10\nthreshold = "2"\n', "threshold"),
    ],
)
def test_config_file_is_read_strictly(tmp_path, capsys, algorithm, config_text, field):
    path = tmp_path / "c.toml"
    path.write_text(config_text)
    assert main(["run", algorithm, "--config", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"error: {field}" in err
    assert not (tmp_path / "out").exists()


def test_config_threshold_inf_is_accepted(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[duets]\nobjective = "cosine"\nnum_agents = 3\nhorizon = 15\nthreshold = inf\n')
    assert main(["run", "diskernelucb", "--config", str(config), "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "duets_diskernelucb_cosine.json").read_text())
    assert data["options"]["threshold"] == "inf"  # as account writes an infinite epsilon
