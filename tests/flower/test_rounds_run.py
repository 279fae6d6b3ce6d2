"""Rounds from what ran: an app written outside this project (``tests/flower_apps/early_stop``) whose main stops after
2 of its 3 configured rounds, and then (``finetune-rounds``) starts a second DP strategy. Every line of the report
states the rounds that ran; the accounting is of the releases that happened: Flower's-accountant row (a Gaussian of
multiplier z per round) equals dp-accounting's PLD over 2 rounds, an independent reference. On Flower 1.43's
``Strategy.start(should_stop=...)`` the same (skipped where the installed Flower has no ``should_stop``).

The apps run on the in-process grid (``tests.flower.inprocess_grid``); no statistical finding is asserted absent
beyond the suite's usual 1e-3 level (the seeds are fixed, so the outcome is the same every run).
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

pytest.importorskip("flwr")

APP = Path(__file__).resolve().parents[1] / "flower_apps" / "early_stop"


def _audit(tmp_path, monkeypatch, capsys, *run_config) -> tuple[int, dict, list[str]]:
    from reports.cli import main
    from tests.flower.inprocess_grid import flower_runtime_in_process

    flower_runtime_in_process(monkeypatch)
    out = tmp_path / f"audit-{len(list(tmp_path.iterdir()))}"
    argv = ["flower", str(APP), "--num-supernodes", "6", "--out", str(out), "--no-progress"]
    code = main(argv + (["--run-config", " ".join(run_config)] if run_config else []))
    return code, json.loads((out / "report.json").read_text()), capsys.readouterr().out.splitlines()


def _flower_accountant_epsilon(rounds: int, z: float = 1.0, delta: float = 1e-5) -> float:
    from dp_accounting import dp_event, pld

    accountant = pld.PLDAccountant()
    accountant.compose(dp_event.GaussianDpEvent(z), rounds)
    return accountant.get_epsilon(delta)


def _has_should_stop() -> bool:
    from flwr.serverapp.strategy import Strategy

    return "should_stop" in inspect.signature(Strategy.start).parameters


@pytest.mark.slow  # two audits (seconds: the accountants of what ran)
def test_a_main_that_stops_is_accounted_and_reported_at_the_rounds_that_ran(tmp_path, monkeypatch, capsys):
    code, result, lines = _audit(tmp_path, monkeypatch, capsys)
    assert code == 0 and result["verdict"] == "PASS", result["findings"]
    [start] = result["starts"]
    assert (start["rounds"], start["rounds_run"], start["recorded_rounds"]) == (3, 2, [1, 2])
    assert result["details"]["config"]["rounds"] == 2
    row = result["rows"]["no-amplification"]["epsilon"]
    assert row == pytest.approx(_flower_accountant_epsilon(2), rel=0.01)
    assert row < _flower_accountant_epsilon(3) * 0.95  # not the configured 3
    [count] = [f for f in result["findings"] if f["code"] == "release-count"]
    assert count["severity"] == "medium" and count["values"] == {"recorded": 2, "configured": 3, "false_alarm": 0.0}
    assert any("2 rounds run (of 3 configured)" in line for line in lines), lines
    assert any(line.startswith("  transcript check: 2 rounds,") for line in lines), lines

    code, result, lines = _audit(tmp_path, monkeypatch, capsys, "finetune-rounds=1")
    assert [(s["rounds"], s["rounds_run"]) for s in result["starts"]] == [(3, 2), (1, 1)]
    [several] = [f for f in result["findings"] if f["code"] == "several-strategies"]
    assert several["values"]["rounds_run"] == [2, 1] and "3 releases in all" in several["message"]
    assert any(": 1 round, around " in line or line.endswith(": 1 round") for line in lines), lines
    assert "its first DP strategy's rounds" in lines[0]


@pytest.mark.skipif(not _has_should_stop(), reason="this Flower's Strategy.start has no should_stop (before 1.43)")
def test_should_stop_ends_the_run_early_and_the_report_says_so(tmp_path, monkeypatch, capsys):
    code, result, lines = _audit(tmp_path, monkeypatch, capsys, 'stop-with="should-stop"')
    assert code == 0, result["findings"]
    [start] = result["starts"]
    assert (start["rounds"], start["rounds_run"]) == (3, 2)
    assert result["rows"]["no-amplification"]["epsilon"] == pytest.approx(_flower_accountant_epsilon(2), rel=0.01)
    assert any("2 rounds run (of 3 configured)" in line for line in lines), lines
