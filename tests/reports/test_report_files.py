"""The output directory: locked for a run, report files swapped in as one set (a reader sees the complete
old set or the complete new set, whichever step of the swap fails), one-line errors for bad --out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from accounting.errors import ConfigurationError
from reports import report_files
from reports.cli import main

ROOT = Path(__file__).resolve().parents[2]
NAMES = report_files.REPORT_NAMES


def _set(tag: str) -> dict:
    return {name: f"{tag} {name}\n" for name in NAMES}


def _read(out: Path) -> set:
    return {(out / name).read_text().split()[0] for name in NAMES if (out / name).exists()}


def test_a_second_run_into_a_locked_directory_exits_2(tmp_path, capsys):
    with report_files.locked_out_dir(tmp_path):
        code = main(["audit", str(ROOT / "configs" / "audit_small.toml"), "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "in use by another audit" in err and err.count("\n") == 0
    assert not (tmp_path / "report.json").exists()
    with report_files.locked_out_dir(tmp_path):  # released when the holder leaves
        pass


def test_swapping_sets_never_shows_a_mix(tmp_path):
    report_files.swap_in_report_set(tmp_path, _set("old"))
    assert _read(tmp_path) == {"old"}
    report_files.swap_in_report_set(tmp_path, _set("new"))
    assert _read(tmp_path) == {"new"} and len(list((tmp_path / ".report-sets").iterdir())) == 1


@pytest.mark.parametrize("failing_call", range(6))
def test_a_failure_at_any_step_of_the_swap_leaves_the_old_set(tmp_path, monkeypatch, failing_call):
    """A crash (here: an OSError from the n-th write, fsync, symlink or rename) at any step leaves the
    complete old set visible; the next run then writes the complete new set."""
    report_files.swap_in_report_set(tmp_path, _set("old"))
    calls = []

    def failing(original):
        def call(*args, **kwargs):
            calls.append(original.__name__)
            if len(calls) == failing_call + 1:
                raise OSError("disk full")
            return original(*args, **kwargs)

        return call

    for name in ("fsync", "symlink", "replace"):
        monkeypatch.setattr(os, name, failing(getattr(os, name)))
    try:
        report_files.swap_in_report_set(tmp_path, _set("new"))
    except OSError:
        pass
    monkeypatch.undo()
    seen = _read(tmp_path)
    assert seen in ({"old"}, {"new"}) and len(seen) == 1
    if len(calls) > failing_call:  # the failure happened before the set link moved
        assert seen == {"old"}
    report_files.swap_in_report_set(tmp_path, _set("next"))
    assert _read(tmp_path) == {"next"}


def test_bad_out_directories_are_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    for bad in (tmp_path / "file", tmp_path / "file" / "below", Path("/proc/dpaudit-test")):
        with pytest.raises(ConfigurationError, match="out"):
            report_files.prepare_out_dir(bad)


def test_report_out_where_its_file_is_a_directory_is_refused(tmp_path, capsys):
    """``report --out DIR`` writes DIR/report.FORMAT: a directory of that name is refused before any work."""
    from reports.model import save_report
    from tests.reports.synthetic_report import synthetic_report

    save_report(synthetic_report(), tmp_path / "report.json")
    (tmp_path / "report.md").mkdir()
    assert main(["report", str(tmp_path / "report.json"), "--out", str(tmp_path)]) == 2
    assert "report.md is a directory" in capsys.readouterr().err


@pytest.mark.parametrize("name", [*NAMES, report_files.SET_LINK])
def test_a_directory_where_a_report_link_goes_is_refused_before_any_work(tmp_path, capsys, name):
    """A directory named report.json (or report-set) in --out cannot be replaced by the link: the audit
    ran to the end and then exited 4, leaving a stray temporary link."""
    (tmp_path / name).mkdir()
    code = main(["audit", str(ROOT / "configs" / "audit_small.toml"), "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and f"{name} is a directory" in err and err.count("\n") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
