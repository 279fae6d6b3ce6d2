"""A rerun into the same --out never reuses a section computed by other code: the audited user module
edited to leak is recomputed (VIOLATION, exit 1), an edit inside our own packages recomputes every
section, and stdout says what was reused and why, or what was recomputed and why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reports.audit import fingerprint
from reports.cli import main
from tests.user_audit_config import user_mechanism_audit

ROOT = Path(__file__).resolve().parents[3]


HONEST = "def count(dataset, rng):\n    return float(len(dataset)) + rng.laplace(0.0, 1.0)\n"
LEAKY = "def count(dataset, rng):\n    # edited: the noise was removed\n    return float(len(dataset))\n"


def _audit(config, out, capsys):
    code = main(["audit", str(config), "--out", str(out), "--quiet", "--allow-code", "--executor", "inprocess"])
    stdout = capsys.readouterr().out
    return code, stdout, json.loads((out / "report.json").read_text())


def _setup(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "stale_mech.py").write_text(HONEST)
    config = tmp_path / "user.toml"
    config.write_text(user_mechanism_audit("stale_mech:count", ROOT / "configs" / "attack_user_example_datasets.toml"))
    return config


def test_an_edited_user_module_is_recomputed_and_refuted(tmp_path, capsys, monkeypatch):
    config, out = _setup(tmp_path, monkeypatch), tmp_path / "out"
    code, stdout, report = _audit(config, out, capsys)
    # 400 trials per world of Laplace(1) at claim 1: the Bonferroni bound exceeds 1 with probability < 5%
    assert code == 0 and report["targets"][0]["verdict"]["status"] == "PASS"
    code, stdout, _ = _audit(config, out, capsys)  # unchanged: everything reused, and stdout says so
    assert code == 0 and "reused" in stdout and "safe because" in stdout and "recomputed" not in stdout
    (tmp_path / "stale_mech.py").write_text(LEAKY)
    sys.modules.pop("stale_mech", None)
    code, stdout, report = _audit(config, out, capsys)
    # no noise: the two worlds never overlap, so the bound is the ceiling at 400 trials (about 4) > 1
    assert report["targets"][0]["verdict"]["status"] == "VIOLATION" and code == 1
    assert "recomputed" in stdout and "the user's module" in stdout
    assert "target-0/probe-0" not in report["provenance"]["reused_sections"]


def test_an_edit_inside_our_packages_recomputes_every_section(tmp_path, capsys, monkeypatch):
    config, out = _setup(tmp_path, monkeypatch), tmp_path / "out"
    extra = tmp_path / "pkg_part.py"
    extra.write_text("A = 1\n")
    real = fingerprint.package_files
    monkeypatch.setattr(fingerprint, "package_files", lambda: [*real(), extra])  # the hash source
    _audit(config, out, capsys)
    _, stdout, report = _audit(config, out, capsys)
    assert len(report["provenance"]["reused_sections"]) >= 2
    extra.write_text("A = 2  # an edit\n")
    _, stdout, report = _audit(config, out, capsys)
    assert report["provenance"]["reused_sections"] == []
    assert "this project's code" in stdout and "safe because" not in stdout
