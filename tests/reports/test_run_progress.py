"""`dpaudit run` progress: a tqdm bar on stderr for every algorithm family, decided as for `dpaudit attack`
(on unless --no-progress, and only when stderr is a terminal); stdout and the result files are the same
with and without it."""

from __future__ import annotations

import importlib
import re
import sys

import pytest

from reports.cli import main

# one small configuration per family (module), each with two runs; the bar's description is the algorithm
FAMILIES = {
    "fts": ["run", "dp-fts-de", "--preset", "synthetic", "--rounds", "3", "--runs", "2", "--accountants", "rdp"],
    "pne": ["run", "fed-pne", "--horizon", "30", "--clients", "2", "--runs", "2"],
    "duets": ["run", "duets", "--horizon", "5", "--num-agents", "2", "--runs", "2"],
    "fedzero": ["run", "dp-fedzero", "--rounds", "20", "--runs", "2", "--accountants", "rdp"],
    "fkm": ["run", "dp-fkm", "--horizon", "400", "--exploration", "0.5", "--runs", "2", "--accountants", "rdp"],
}


def _run(argv, capsys, out, *extra):
    code = main([*argv, "--out", str(out), "--force", *extra])
    captured = capsys.readouterr()
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.suffix == ".json"}
    return code, captured.out, captured.err, files


@pytest.mark.parametrize("family", FAMILIES)
def test_progress_goes_to_stderr_only_and_changes_no_output(family, tmp_path, capsys, monkeypatch):
    argv = FAMILIES[family]
    code, quiet_out, quiet_err, quiet_files = _run(argv, capsys, tmp_path, "--no-progress")
    assert code == 0 and quiet_err == "" and quiet_files
    code, plain_out, plain_err, _ = _run(argv, capsys, tmp_path)  # stderr is not a terminal: no bar, as attack
    assert code == 0 and plain_err == "" and plain_out == quiet_out
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, bar_out, bar_err, bar_files = _run(argv, capsys, tmp_path)
    assert code == 0 and bar_out == quiet_out and bar_files == quiet_files
    assert f"{argv[1]}:" in bar_err and "%|" in bar_err  # tqdm's bar, described by the algorithm
    code, _, forced_off_err, _ = _run(argv, capsys, tmp_path, "--no-progress")
    assert code == 0 and forced_off_err == ""


def test_a_large_result_file_is_announced_on_stderr(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("reports.commands.run_progress.ANNOUNCE_BYTES", 0)  # announce every file
    monkeypatch.setattr("reports.commands.run_progress.ANNOUNCE_POINTS", 800)  # 400 rounds x 2 runs
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main([*FAMILIES["fkm"], "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    path = tmp_path / "fkm_dp-fkm_linear_event.json"
    assert f"encoding the result for {path} (800 curve points)" in err and f"writing 0 MB to {path}" in err
    monkeypatch.setattr("reports.commands.run_progress.ANNOUNCE_POINTS", 801)
    assert main([*FAMILIES["fkm"], "--out", str(tmp_path), "--force"]) == 0
    assert "encoding" not in capsys.readouterr().err


def test_no_progress_appears_in_every_run_help(capsys):
    from reports.commands.run import FAMILY_MODULES

    algorithms = [name for module in FAMILY_MODULES for name in importlib.import_module(module).ALGORITHM_HELP]
    assert len(algorithms) > len(FAMILIES)
    for algorithm in algorithms:
        assert main(["run", algorithm, "--help"]) == 0
        assert re.search(r"--no-progress\s+no progress bar on stderr", capsys.readouterr().out)  # attack's words
