"""A rerun into the same --out never reuses a section computed by other code: the audited user module
edited to leak is recomputed (VIOLATION, exit 1), an edit inside our own packages recomputes every
section, and stdout says what was reused and why, or what was recomputed and why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reports.audit import fingerprint
from reports.cli import main
from tests.user_audit_config import gaussian_audit, user_mechanism_audit

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


GAUSSIAN = gaussian_audit("cache test", seed=4, trials=500)


def test_a_damaged_saved_section_is_recomputed_not_trusted(tmp_path, capsys):
    """One changed digit in a saved section (here the exact accountant's epsilon, 1 -> 9) used to be
    reused as it stood: the claim was REFUTED by a number no accountant computed (VIOLATION, exit 1)."""
    config, out = tmp_path / "g.toml", tmp_path / "out"
    config.write_text(GAUSSIAN)
    code, _, first = _audit(config, out, capsys)
    assert code == 0 and first["targets"][0]["verdict"]["analytic"]["status"] == "PROVED"
    section = out / ".audit-work" / "target-0" / "accounting.json"
    stored = json.loads(section.read_text())
    row = next(r for r in stored["value"]["rows"] if r["accountant"] == "exact")
    text = section.read_text()
    assert text.count(json.dumps(row["epsilon"])) == 1
    section.write_text(text.replace(json.dumps(row["epsilon"]), json.dumps(row["epsilon"] + 8.0)))
    code, stdout, report = _audit(config, out, capsys)
    assert code == 0 and report["targets"][0]["verdict"] == first["targets"][0]["verdict"]
    assert "target-0/accounting (damaged" in stdout
    assert "target-0/accounting" not in report["provenance"]["reused_sections"]


def test_a_changed_probe_kind_is_not_served_from_the_saved_section(tmp_path, capsys):
    """The section records the probe's kind; the same probe declared end-to-end was reported as mechanism."""
    config, out = tmp_path / "g.toml", tmp_path / "out"
    config.write_text(GAUSSIAN)
    _audit(config, out, capsys)
    config.write_text(GAUSSIAN.replace("trials = 500", 'trials = 500\nkind = "end-to-end"'))
    _, _, report = _audit(config, out, capsys)
    assert report["targets"][0]["probes"][0]["kind"] == "end-to-end"


def test_data_files_of_our_packages_are_in_the_fingerprint(tmp_path, monkeypatch):
    """A target's parameters may name a preset (dpfed/presets/fts_*.toml) whose values are read at run time:
    an edited preset must change the fingerprint, as an edited module does (only *.py files counted)."""
    preset = tmp_path / "dpfed" / "presets" / "fts_synthetic.toml"
    preset.parent.mkdir(parents=True)
    (tmp_path / "dpfed" / "__init__.py").write_text("")
    preset.write_text("noise_multiplier = 1.0\n")
    monkeypatch.setattr(fingerprint, "ROOT", tmp_path)
    before = fingerprint.our_code_hash()
    preset.write_text("noise_multiplier = 0.1\n")
    assert fingerprint.our_code_hash() != before
    assert "scikit-learn" in fingerprint.library_versions()  # the SVM objective and learned scores use it
