"""Injected faults: a crash inside dpaudit, a full disk, Ctrl-C, damaged audit cache entries, user
mechanisms that print or misbehave, and the strict reading of every shipped configuration file.

Each fault must end in the documented exit code (``reports/exit_codes.py``) with one line on stderr and
no traceback, unless ``--debug`` asks for it.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import numpy as np
import pytest

from accounting.errors import ConfigurationError
from reports.cli import main
from tests.bad_input_files import GOOD_DATASETS, USER_MECHANISMS

ROOT = Path(__file__).resolve().parent.parent
PLAN = ["plan", "--trials", "1000", "--delta", "1e-5"]
PNE = ["run", "fed-pne", "--horizon", "30", "--clients", "2"]


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    (tmp_path / "umech.py").write_text(USER_MECHANISMS)
    (tmp_path / "ds.toml").write_text(GOOD_DATASETS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _raise(exc):
    def fail(*args, **kwargs):
        raise exc

    return fail


@pytest.mark.parametrize(
    "exc", [RuntimeError("boom\nsecond line"), MemoryError(), KeyError("k"), SystemExit(0), SystemExit(1)]
)
def test_a_crash_is_exit_4_one_line_and_a_log(monkeypatch, tmp_path, capfd, exc):
    monkeypatch.setattr("reports.commands.plan.max_certifiable_epsilon", _raise(exc))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    assert main(PLAN) == 4
    err = capfd.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "internal error" in err and "Traceback" not in err
    logs = list(tmp_path.glob("dpaudit-error-*.log"))
    assert len(logs) == 1 and str(logs[0]) in err and "Traceback" in logs[0].read_text()


def test_debug_prints_the_traceback(monkeypatch, capfd):
    monkeypatch.setattr("reports.commands.plan.max_certifiable_epsilon", _raise(RuntimeError("boom")))
    assert main(["--debug", *PLAN]) == 4
    err = capfd.readouterr().err
    assert "Traceback" in err and "RuntimeError: boom" in err


def test_a_crash_of_a_run_logs_into_its_output_directory(monkeypatch, tmp_path, capfd):
    monkeypatch.setattr("reports.commands.run_pne.execute", _raise(ValueError("bug")))
    out = tmp_path / "out"
    out.mkdir()
    assert main([*PNE, "--out", str(out)]) == 4
    err = capfd.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(out / "dpaudit-error.log") in err


def test_a_full_disk_is_exit_4_never_a_verdict(monkeypatch, tmp_path, capfd):
    monkeypatch.setattr(
        "reports.commands.run_pne.atomic_write_bytes", _raise(OSError(errno.ENOSPC, "No space left on device"))
    )
    assert main([*PNE, "--out", str(tmp_path / "out")]) == 4
    err = capfd.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "No space left" in err and "internal" not in err


def test_ctrl_c_is_130(monkeypatch, capfd):
    monkeypatch.setattr("reports.commands.plan.max_certifiable_epsilon", _raise(KeyboardInterrupt()))
    assert main(PLAN) == 130
    assert len(capfd.readouterr().err.strip().splitlines()) == 1


@pytest.mark.parametrize("content", [b"", b"{", b"[]", b"null", b'{"key": 1}', b"\xff\xfe", b'"text"'])
def test_a_damaged_audit_cache_entry_is_recomputed(tmp_path, content):
    from reports.audit.cache import SectionCache
    from reports.audit.model import PlannerSection

    reused = []
    cache = SectionCache(str(tmp_path), 0, reused)
    section = PlannerSection(
        trials=10, delta=1e-5, confidence=0.95, ceiling=1.0, perfect_ceiling=2.0, trials_for_claim=None, estimator="cp"
    )
    cache.path("planner").parent.mkdir(parents=True)
    cache.path("planner").write_bytes(content)
    assert cache.get_or_compute("planner", {"a": 1}, lambda: section, PlannerSection) == section
    assert reused == []
    again = cache.get_or_compute("planner", {"a": 1}, lambda: pytest.fail("not resumed"), PlannerSection)
    assert again == section and len(reused) == 1


def test_a_printing_mechanism_keeps_json_output_valid(user_dir, capfd):
    code = main(
        [
            "attack",
            "--mechanism",
            "umech:prints",
            "--datasets",
            "ds.toml",
            "--trials",
            "200",
            "--seed",
            "1",
            "--format",
            "json",
            "--claim-epsilon",
            "5",
        ]
    )
    out, err = capfd.readouterr()
    assert code in (0, 1, 3) and json.loads(out)["probe"]["name"] == "user"
    assert "chatter from the mechanism" in err


def test_the_worker_gives_the_scores_of_an_in_process_call(user_dir):
    """The generator travels to the worker and back: outputs and the generator's state are those of
    calling the function here."""
    import umech

    from attacks.probes import get_probe

    probe = get_probe("user", function="umech:ok", datasets="ds.toml")
    rng_worker, rng_here = np.random.default_rng(3), np.random.default_rng(3)
    outputs = probe.outputs(1, 50, rng_worker)
    expected = np.array([[umech.ok(np.array([1.0, 2.0, 3.0]), rng_here)] for _ in range(50)])
    np.testing.assert_array_equal(outputs, expected)
    assert rng_worker.random() == rng_here.random()


def test_a_hanging_mechanism_is_stopped(user_dir):
    from attacks.probes import get_probe

    probe = get_probe("user", function="umech:hangs", datasets="ds.toml", timeout=0.5)
    with pytest.raises(ConfigurationError, match="within 0.5 s"):
        probe.outputs(0, 1, np.random.default_rng(0))
    assert probe._worker._process.poll() is not None  # the worker was stopped


def test_allow_code_lets_a_config_name_its_mechanism(user_dir, capfd):
    (user_dir / "a.toml").write_text('mechanism = "umech:ok"\ndatasets = "ds.toml"\ntrials = 200\ntimeout = 30\n')
    assert main(["attack", "--config", "a.toml"]) == 2
    assert "--allow-code" in capfd.readouterr().err
    assert main(["attack", "--config", "a.toml", "--allow-code", "--claim-epsilon", "5"]) in (0, 3)


@pytest.mark.parametrize(
    "name", sorted(p.name for p in (ROOT / "configs").glob("attack_*.toml") if "datasets" not in p.name)
)
def test_shipped_attack_configs_are_strictly_valid(name):
    from reports.commands.attack import check_params, load_config

    config = load_config(str(ROOT / "configs" / name))
    check_params(config["probe"], config.get("params", {}))


@pytest.mark.parametrize("name", ["landmine", "svm-breast-cancer", "svm-digits", "synthetic"])
def test_presets_are_strictly_valid(name):
    from dpfed.fts import FTSConfig

    FTSConfig.toml_keys(ROOT / "dpfed" / "presets" / f"fts_{name}.toml")


def test_a_preset_with_a_bad_key_is_refused(tmp_path, monkeypatch):
    from dpfed.fts import config as fts_config

    (tmp_path / "fts_synthetic.toml").write_text('objective = "synthetic"\ndim = 1\nrate = "0.35"\n')
    monkeypatch.setattr(fts_config, "PRESET_DIR", tmp_path)
    with pytest.raises(ConfigurationError, match="rate: expected a number, got string"):
        fts_config.FTSConfig.from_preset("synthetic")


@pytest.mark.parametrize(
    "name, algorithm",
    [("pne_garland.toml", "fed-pne"), ("pne_dp_garland.toml", "dp-fed-pne"), ("pne_hct_garland.toml", "hct")],
)
def test_shipped_pne_configs_are_strictly_valid(name, algorithm):
    from accounting.strict import read_strict_toml
    from reports.commands.run_pne import config_schema

    read_strict_toml(ROOT / "configs" / name, config_schema(algorithm))


def test_output_checks_leave_nothing_behind(tmp_path):
    from reports.commands.common import check_output_dir, check_output_file

    target = tmp_path / "a" / "b"
    assert check_output_dir("out", target) == target
    check_output_file("out", tmp_path / "report.html")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ConfigurationError, match="not a directory"):
        (tmp_path / "f").write_text("x")
        check_output_dir("out", tmp_path / "f")


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_a_hand_edited_report_cannot_inject_markup(tmp_path, capfd, fmt):
    from reports.model import validate_report
    from tests.reports.synthetic_report import synthetic_report

    report = validate_report(synthetic_report())
    report["targets"][0]["probes"][0]["name"] = '"><img src=x onerror=alert(1)>'
    (tmp_path / "r.json").write_text(json.dumps(report))
    assert main(["report", str(tmp_path / "r.json"), "--format", fmt]) == report["exit_code"]  # the saved verdict's
    assert "<img src=x" not in capfd.readouterr().out
