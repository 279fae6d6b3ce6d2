"""``--out DIR`` in the commands that write one file (issue 47, one vocabulary): ``flower`` and ``opacus-check`` write
``DIR/report.json``, ``report`` writes ``DIR/report.FORMAT``, the directory made if missing, one line on stderr naming
the file. The old form ``--out FILE`` (a name ending in .json, .md or .html that is not a directory) still writes
that file as before and warns once. A bad ``--out`` is one line and exit 2 before any work, nothing written.

Fast set-ups: a saved synthetic report, the tiny opacus set-up (tests/opacus_setup/tiny_setups.py, a few seconds),
Flower's run on the in-process grid (tests.flower.inprocess_grid, one round)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.cli import main
from tests.flower.test_cli_refusals import no_flower_run  # noqa: F401 - a fixture: Flower's run fails the test

SETUP = "tests/opacus_setup/tiny_setups.py:correct"
DIGITS = Path(__file__).resolve().parent / "flower_apps" / "digits_dp"
FLOWER = ["flower", str(DIGITS), "--num-supernodes", "4", "--run-config", "num-server-rounds=1", "--no-progress"]
OLD_FORM = "--out FILE is the old form"


@pytest.fixture
def saved(tmp_path) -> Path:
    from reports.model import save_report
    from tests.reports.synthetic_report import synthetic_report

    path = tmp_path / "saved.json"
    save_report(synthetic_report(), path)
    return path


@pytest.fixture
def warn_afresh(monkeypatch):
    """Each test sees the old form's warning as a fresh process would (it is shown once per process)."""
    monkeypatch.setattr("accounting.vocabulary._warned", set())


def _written(capsys, path: Path) -> str:
    """stderr, asserting one of its lines names ``path`` as written (Flower may log a warning of its own)."""
    err = capsys.readouterr().err
    assert f"wrote {path}" in err.splitlines(), err
    return err


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_report_writes_dir_report_format_into_a_new_directory(saved, tmp_path, capsys, fmt, warn_afresh):
    from reports.commands.report import render
    from reports.model import load_report

    out = tmp_path / "new" / "rendered"
    assert main(["report", str(saved), "--format", fmt, "--out", str(out)]) == load_report(saved)["exit_code"]
    assert sorted(p.name for p in out.iterdir()) == [f"report.{fmt}"]
    assert (out / f"report.{fmt}").read_text() == render(load_report(saved), fmt)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"wrote {out / f'report.{fmt}'}\n"


def test_report_without_out_prints_to_stdout_and_writes_nothing(saved, tmp_path, capsys):
    main(["report", str(saved), "--format", "json"])
    assert json.loads(capsys.readouterr().out)["schema_version"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["saved.json"]


@pytest.mark.parametrize("name", ["again.html", "AGAIN.HTML", "again.md", "sub/again.json"])
def test_report_old_file_form_writes_the_file_and_warns_once(saved, tmp_path, capsys, name, warn_afresh):
    from reports.commands.report import render
    from reports.model import load_report

    out = tmp_path / name
    for warnings in (1, 0):  # once per process
        main(["report", str(saved), "--format", "html", "--out", str(out)])
        assert out.read_text() == render(load_report(saved), "html")
        assert _written(capsys, out).count(OLD_FORM) == warnings


def test_old_form_warning_text_is_one_line_after_the_file_is_written(saved, tmp_path, capsys, warn_afresh):
    out = tmp_path / "again.md"
    main(["report", str(saved), "--out", str(out)])
    assert capsys.readouterr().err.splitlines() == [
        f"wrote {out}",
        "dpaudit: warning: --out FILE is the old form; --out names a directory now (it writes DIR/report.md); "
        f"wrote {out} this time"]


def test_a_name_like_a_file_with_a_trailing_slash_is_a_directory(saved, tmp_path, capsys, warn_afresh):
    from reports.model import load_report

    out = f"{tmp_path / 'rendered.json'}/"
    assert main(["report", str(saved), "--format", "md", "--out", out]) == load_report(saved)["exit_code"]
    assert (tmp_path / "rendered.json" / "report.md").is_file()
    assert OLD_FORM not in capsys.readouterr().err


def test_a_directory_named_like_a_file_is_a_directory(saved, tmp_path, capsys, warn_afresh):
    out = tmp_path / "looks.json"
    out.mkdir()
    main(["report", str(saved), "--format", "json", "--out", str(out)])
    assert (out / "report.json").is_file() and OLD_FORM not in _written(capsys, out / "report.json")


def test_opacus_check_writes_dir_report_json_and_the_old_form_still_works(tmp_path, capsys, warn_afresh):
    out = tmp_path / "new" / "check"
    assert main(["opacus-check", "--setup", SETUP, "--out", str(out), "--no-progress"]) == 0
    result = json.loads((out / "report.json").read_text())
    assert result["verdict"] == "PASS" and sorted(p.name for p in out.iterdir()) == ["report.json"]
    assert OLD_FORM not in _written(capsys, out / "report.json")
    old = tmp_path / "check.json"
    assert main(["opacus-check", "--setup", SETUP, "--out", str(old), "--no-progress"]) == 0
    assert json.loads(old.read_text())["rows"] == result["rows"]
    assert _written(capsys, old).count(OLD_FORM) == 1


@pytest.mark.parametrize("command", ["report", "opacus-check"])
def test_an_audits_output_directory_is_refused_leaving_its_report_as_it_was(saved, tmp_path, capsys, command):
    """``--out audit-report`` after ``dpaudit audit --out audit-report``: the audit's report.json / .md / .html are
    links into its report set; a second command's file there would sit beside the audit's others, two reports
    mixed. Refused in one line; the audit's report is untouched."""
    from reports.commands.common import AUDIT_SET_LINK
    from reports.report_files import SET_LINK, swap_in_report_set

    assert AUDIT_SET_LINK == SET_LINK

    audit_dir = tmp_path / "audit-report"
    audit_dir.mkdir()
    swap_in_report_set(audit_dir, {"report.json": "{}", "report.md": "# audit"})
    argv = {"report": ["report", str(saved), "--format", "md"],
            "opacus-check": ["opacus-check", "--setup", SETUP, "--no-progress"]}[command]
    assert main([*argv, "--out", str(audit_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert "holds an audit's report" in err and len(err.splitlines()) == 1
    assert (audit_dir / "report.md").is_symlink() and (audit_dir / "report.md").read_text() == "# audit"


@pytest.mark.parametrize("form", ["dir", "old"])
def test_flower_writes_dir_report_json_and_the_old_form_still_works(tmp_path, monkeypatch, capsys, form,
                                                                     warn_afresh):
    pytest.importorskip("flwr")
    from tests.flower.inprocess_grid import flower_runtime_in_process

    flower_runtime_in_process(monkeypatch)
    out = tmp_path / "new" / ("audit" if form == "dir" else "audit.json")
    written = out / "report.json" if form == "dir" else out
    code = main([*FLOWER, "--out", str(out)])
    audit = json.loads(written.read_text())
    assert code == {"PASS": 0, "VIOLATION": 1, "INCONCLUSIVE": 3}[audit["verdict"]]
    assert audit["app"] == str(DIGITS) and audit["run_config"] == {"num-server-rounds": 1}
    assert _written(capsys, written).count(OLD_FORM) == (form == "old")


# ----- refusals: one line, exit 2, before any work, nothing written ------------------------------------------------

MISTAKES = {  # --out value (afile: a regular file in the working directory) -> words of the one line
    "empty": ("", "out: is empty"),
    "blank": ("  ", "out: is empty"),
    "a-file-without-a-report-ending": ("afile", "out: afile is a file, not a directory: --out DIR writes DIR/"),
    "a-dir-under-a-file": ("afile/x", "which is a file, not a directory"),
    "a-file-under-a-file": ("afile/x.json", "afile exists and is not a directory"),
    "proc-dir": ("/proc/dpaudit/x", "out: cannot write"),
    "proc-file": ("/proc/dpaudit/x.json", "out: cannot write"),
    "proc-self": ("/proc/self", "out: cannot write"),
    "the-file-is-a-directory": ("taken", "out: taken/report.json is a directory"),
    "name-too-long": ("9" * 400, "out: cannot write"),
}
COMMANDS = {"report": ["report", "saved.json", "--format", "json"], "flower": FLOWER,
            "opacus-check": ["opacus-check", "--setup", SETUP, "--no-progress"]}


@pytest.mark.usefixtures("no_flower_run")
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_bad_out_is_one_line_and_exit_2_before_any_work(saved, tmp_path, monkeypatch, capsys, command, mistake):
    if command == "opacus-check":  # the set-up's code would run after the check
        monkeypatch.setattr("attacks.opacus_checks.check.check_opacus_setup",
                            lambda *a, **k: pytest.fail("the set-up ran"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "taken" / "report.json").mkdir(parents=True)  # where the file would go (report: --format json)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    value, words = MISTAKES[mistake]
    assert main([*COMMANDS[command], "--out", value]) == 2
    captured = capsys.readouterr()
    assert len(captured.err.strip().splitlines()) == 1 and words in captured.err, captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before, "a refused command wrote files"


def test_report_on_another_commands_report_json_names_that_command(tmp_path, capsys):
    """Every command writes ``DIR/report.json`` now; ``dpaudit report`` on opacus-check's (the real command's output)
    or on a Flower audit's says which command wrote it, in one line, exit 2."""
    out = tmp_path / "check"
    assert main(["opacus-check", "--setup", SETUP, "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["report", str(out / "report.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "`dpaudit opacus-check` writes" in err and len(err.splitlines()) == 1
    flower_like = tmp_path / "flower.json"  # the keys a `dpaudit flower` report has (tests/flower run it for real)
    flower_like.write_text(json.dumps({"app": "x", "starts": [], "verdict": "PASS", "findings": []}))
    assert main(["report", str(flower_like)]) == 2
    assert "`dpaudit flower` writes" in capsys.readouterr().err
