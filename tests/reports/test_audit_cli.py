"""`dpaudit audit` end to end on small configurations: exit codes, the three report files, schema,
re-rendering, determinism, resuming after an interruption, and one-line errors for bad configurations.

The configurations' seeds are fixed, so every verdict here is deterministic. The VIOLATIONs asserted come
from the exact profile's refutation of the classic calibration (no randomness); a correct target's PASS
needs its probes not to show a VIOLATION, which for a random seed fails with probability at most
1 - confidence = 0.05 per target (Bonferroni over its probes)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from reports.audit.config import DEFAULT_CONFIG, load_config
from reports.cli import main
from reports.model import load_report, strip_volatile
from reports.render_html import render_html
from reports.render_markdown import render_markdown
from tests.user_audit_config import gaussian_audit

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "configs" / "audit_small.toml"
VOLATILE_LINE = re.compile(r"(Started|Finished|Duration|Sections reused|Command)[^\n]*")

GAUSSIAN_ONLY = gaussian_audit("resume test", seed=5, trials=20000, batch_size=2000)


def _audit(config, out: Path, *extra) -> int:
    return main(["audit", str(config), "--out", str(out), "--quiet", *extra])


@pytest.fixture(scope="module")
def small_audit(tmp_path_factory):
    out = tmp_path_factory.mktemp("small")
    code = _audit(SMALL, out)
    return code, out


def test_small_audit_writes_three_valid_files(small_audit):
    code, out = small_audit
    report = load_report(out / "report.json")  # validates against the schema
    assert code == report["exit_code"] == 1  # the classic calibration at epsilon = 10 is refuted exactly
    assert [t["verdict"]["status"] for t in report["targets"]][0] == "VIOLATION"
    md, html = (out / "report.md").read_text(), (out / "report.html").read_text()
    assert md == render_markdown(report) and html == render_html(report)
    first, second = report["targets"]
    assert first["calibration"]["failure_threshold"] == pytest.approx(8.42, abs=0.01)
    assert any(f["id"] == "classic-calibration" for f in first["findings"])
    assert second["utility"]["metric"].startswith("cumulative regret")
    # the classic target is refuted by the exact profile, the analytic one proved by it
    assert first["verdict"]["analytic"]["status"] == "REFUTED" and second["verdict"]["analytic"]["status"] == "PROVED"
    assert second["verdict"]["status"] == "PASS"
    assert not any(f["id"] == "claim-refuted" for f in second["findings"])  # findings stay with their target
    # the probe attacks the classic sigma and says so (it showed its own default, "analytic")
    assert first["probes"][0]["params"]["calibration"] == "classic"
    prov = report["provenance"]
    assert prov["command"] == f"dpaudit audit {SMALL} --out {out} --quiet"  # as typed
    assert prov["reused_from"] is None and prov["reused_sections"] == []
    assert prov["seed"] == 7 and prov["config_hash"].startswith("sha256:") and prov["duration_seconds"] >= 0
    assert prov["packages"]["numpy"] and prov["started"] <= prov["finished"]


def test_report_command_gives_the_same_files(small_audit, capsys):
    _, out = small_audit
    for fmt, name in (("md", "report.md"), ("html", "report.html")):
        assert main(["report", str(out / "report.json"), "--format", fmt]) == 1  # the saved VIOLATION's exit code
        assert capsys.readouterr().out == (out / name).read_text()


def test_same_configuration_and_seed_give_identical_reports(small_audit, tmp_path):
    _, out = small_audit
    assert _audit(SMALL, tmp_path) == 1
    a, b = load_report(out / "report.json"), load_report(tmp_path / "report.json")
    assert strip_volatile(a) == strip_volatile(b)
    for name in ("report.md", "report.html"):
        assert VOLATILE_LINE.sub("", (out / name).read_text()) == VOLATILE_LINE.sub("", (tmp_path / name).read_text())


def test_interrupted_audit_resumes_without_redoing_batches(tmp_path, monkeypatch):
    from attacks.executors import checkpoint as checkpoint_module
    from attacks.probes.mechanisms import GaussianProbe

    config = tmp_path / "resume.toml"
    config.write_text(GAUSSIAN_ONLY)
    out = tmp_path / "out"
    original_save = checkpoint_module.Checkpoint.save
    saved = []

    def save_then_die(self, task, scores):
        original_save(self, task, scores)
        saved.append(task.key)
        if len(saved) == 5:
            raise KeyboardInterrupt  # as if the user pressed Ctrl-C after five finished batches

    monkeypatch.setattr(checkpoint_module.Checkpoint, "save", save_then_die)
    assert _audit(config, out) == 130
    assert not any((out / n).exists() for n in ("report.json", "report.md", "report.html"))
    monkeypatch.setattr(checkpoint_module.Checkpoint, "save", original_save)

    original_scores, calls = GaussianProbe.scores, []

    def counting_scores(self, world, trials, rng):
        calls.append(trials)
        return original_scores(self, world, trials, rng)

    monkeypatch.setattr(GaussianProbe, "scores", counting_scores)
    code = _audit(config, out)
    resumed = load_report(out / "report.json")
    assert code == resumed["exit_code"]
    assert calls.count(2000) == 20 - 5  # only the unfinished batches ran again
    assert len(calls) == 15 + 3 and calls[:3] == [100, 100, 200]  # and three small batches timed before any work
    probe = resumed["targets"][0]["probes"][0]
    assert (probe["batches_total"], probe["batches_resumed"]) == (20, 5)
    assert "target-0/accounting" in resumed["provenance"]["reused_sections"]
    assert resumed["provenance"]["reused_from"] == "interrupted run"
    assert _audit(config, out) == code  # a plain rerun of a finished audit is not "resumed"
    assert load_report(out / "report.json")["provenance"]["reused_from"] == "finished run"

    monkeypatch.setattr(GaussianProbe, "scores", original_scores)
    fresh_out = tmp_path / "fresh"
    assert _audit(config, fresh_out) == code
    fresh = load_report(fresh_out / "report.json")
    for report in (fresh, resumed):  # the batch bookkeeping legitimately differs
        report["targets"][0]["probes"][0].pop("batches_resumed")
    assert strip_volatile(fresh) == strip_volatile(resumed)
    assert not list(out.rglob("*.tmp"))


def test_example_configurations_parse():
    paths = sorted((ROOT / "configs").glob("audit_*.toml")) + [DEFAULT_CONFIG]
    assert len(paths) >= 4
    for path in paths:
        config = load_config(path)
        assert config["targets"] and config["hash"].startswith("sha256:")
    default = load_config(None)
    fts = default["targets"][0]
    assert fts.claim.epsilon == 15.17 and fts.claim.delta == pytest.approx(29**-1.1)
    assert fts.parameters["rate"] == 0.35 and fts.parameters["clip"] == 22.0
    assert {t.parameters.get("calibration") for t in default["targets"] if t.algorithm == "dp-fed-pne"} == {
        "classic",
        "analytic",
    }
    # the two preset examples are the default audit split in two (they must not drift apart)
    split = [load_config(ROOT / "configs" / n)["targets"] for n in ("audit_dpftsde.toml", "audit_dpfedpne.toml")]
    # the same targets; only the folder a relative path would be read from differs (configs/ against the default's)
    same_folder = [dataclasses.replace(t, base_dir="") for t in split[0] + split[1]]
    assert same_folder == [dataclasses.replace(t, base_dir="") for t in default["targets"]]


def test_planted_bug_example_is_a_violation(tmp_path):
    assert _audit(ROOT / "configs" / "audit_planted_bug.toml", tmp_path, "--trials", "5000") == 1
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["targets"][0]["verdict"]["empirical"]["lower_bound"]["epsilon"] > 2.0


BASE = """
[[target]]
name = "t"
algorithm = "mechanism"
[target.parameters]
type = "gaussian"
noise_multiplier = 1.0
[target.claim]
epsilon = 1.0
delta = 1e-5
neighbouring = "add-remove"
unit = "one record"
[[target.probes]]
name = "gaussian"
trials = 100
"""


@pytest.mark.parametrize(
    "text, field",
    [
        (BASE.replace('algorithm = "mechanism"', 'algorithm = "dp-magic"'), "target[0].algorithm"),
        (
            BASE.replace(
                '[target.claim]\nepsilon = 1.0\ndelta = 1e-5\nneighbouring = "add-remove"\nunit = "one record"\n',
                "",
            ),
            "target[0].claim",
        ),
        (BASE.replace("delta = 1e-5", "delta = 1.0"), "target[0].claim.delta"),
        (BASE.replace("delta = 1e-5", "delta = 1.5"), "target[0].claim.delta"),
        (BASE.replace("trials = 100", "trials = 0"), "target[0].probes[0].trials"),
        (BASE.replace('name = "gaussian"', 'name = "no-such-probe"'), "target[0].probes[0].name"),
        (BASE + "\n[target.claim\n", "config"),
        ("title = 'nothing'\n", "target"),
        (
            BASE.replace('neighbouring = "add-remove"', 'neighbouring = "swap"'),
            "target[0].claim.neighbouring",
        ),
        (
            BASE.replace("noise_multiplier = 1.0", "noise_multiplier = -1.0"),
            "target[0].parameters.noise_multiplier",
        ),
        (
            BASE.replace("trials = 100", "trials = 100\n[target.probes.params]\nloudness = 3"),
            "target[0].probes[0].params.loudness",
        ),
        (
            BASE.replace('algorithm = "mechanism"', 'algorithm = "dp-fts-de"').replace(
                'type = "gaussian"', 'preset = "svm-breast-cancer"\nrate = 1.5'
            ),
            "target[0].parameters.rate",
        ),
        # issue 9: misspelt, misplaced and wrongly typed keys at every level are errors, never ignored
        (BASE.replace("noise_multiplier = 1.0", "noise_multiplier = 1.0\nstep = 100"), "target[0].parameters.step"),
        (BASE.replace("noise_multiplier = 1.0", 'noise_multiplier = "1.0"'), "target[0].parameters.noise_multiplier"),
        ("trials = 5\n" + BASE, "trials"),
        (BASE.replace('name = "t"', 'name = ["a", "b"]'), "target[0].name"),
        (BASE.replace("epsilon = 1.0", 'epsilon = "1.0"'), "target[0].claim.epsilon"),
        (BASE.replace('unit = "one record"', 'unit = "one record"\nsensitivty = 2'), "target[0].claim.sensitivty"),
        (BASE.replace("trials = 100", "trials = 100\nhorizn = 3"), "target[0].probes[0].horizn"),
        (
            BASE.replace('algorithm = "mechanism"', 'algorithm = "dp-fed-pne"').replace(
                'type = "gaussian"\nnoise_multiplier = 1.0', "horizn = 10"
            ),
            "target[0].parameters.horizn",
        ),
        (BASE.replace('name = "gaussian"', 'name = "pne-reward"'), "target[0].probes[0].name"),
        (BASE.replace('name = "gaussian"', 'name = "user"'), "target[0].probes[0].name"),  # needs --allow-code
    ],
)
def test_bad_configuration_is_one_line_naming_the_field(tmp_path, capsys, text, field):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    assert _audit(path, tmp_path / "out") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert f"error: {field}" in err, err
    assert not (tmp_path / "out" / "report.json").exists()


def test_executors_give_the_same_report(tmp_path):
    config = tmp_path / "g.toml"
    config.write_text(GAUSSIAN_ONLY)
    assert _audit(config, tmp_path / "a") == _audit(config, tmp_path / "b", "--executor", "processes", "--workers", "2")
    a, b = (load_report(tmp_path / d / "report.json") for d in "ab")
    for report in (a, b):
        report["provenance"].pop("command")  # names the executor
    assert strip_volatile(a) == strip_volatile(b)


def test_bad_command_line_values_exit_2(tmp_path, capsys):
    assert _audit(SMALL, tmp_path, "--trials", "0") == 2
    assert "trials" in capsys.readouterr().err
    assert _audit(SMALL, tmp_path, "--trials", "2.5") == 2
    assert "whole number" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert _audit(SMALL, tmp_path / "file") == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["audit", str(tmp_path / "missing.toml"), "--out", str(tmp_path)]) == 2


KILL_CONFIG = """
title = "kill test"
seed = 9
[[target]]
name = "subsampled Gaussian, 20 rounds"
algorithm = "mechanism"
accountants = ["rdp"]
[target.parameters]
type = "subsampled-gaussian"
rate = 0.35
noise_multiplier = 1.0
steps = 20
population = 29
[target.claim]
epsilon = 15.0
delta = 0.01
neighbouring = "add-remove"
unit = "one agent"
[[target.probes]]
name = "subsampled-gaussian"
trials = 12000
batch_size = 200
[target.probes.params]
others = 28
"""


def test_killed_audit_leaves_no_partial_report_and_resumes(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    config = tmp_path / "kill.toml"
    config.write_text(KILL_CONFIG)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "reports.cli", "audit", str(config), "--out", str(out), "--quiet"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if len(list(out.rglob("*.npy"))) >= 10:
            break
        time.sleep(0.02)
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    finished_batches = len(list(out.rglob("*.npy")))
    assert killed, "the audit finished before it could be killed; make its probe slower"
    # each report file is absent or complete (atomic writes): never half-written
    if (out / "report.json").exists():
        load_report(out / "report.json")
    if (out / "report.html").exists():
        assert (out / "report.html").read_text().rstrip().endswith("</html>")
    assert _audit(config, out) in (0, 3)
    resumed = load_report(out / "report.json")
    probe = resumed["targets"][0]["probes"][0]
    assert probe["batches_total"] == 120
    # whatever finished before the kill is reused, not redone
    assert probe["batches_resumed"] == finished_batches >= 10
    fresh_out = tmp_path / "fresh"
    _audit(config, fresh_out)
    fresh = load_report(fresh_out / "report.json")
    for report in (fresh, resumed):
        report["targets"][0]["probes"][0].pop("batches_resumed")
    assert strip_volatile(fresh) == strip_volatile(resumed)
    assert len(list((out / ".report-sets").iterdir())) == 1 and not list(out.glob(".*.tmp"))  # nothing left over


def test_dp_fed_pne_example_finds_the_classic_calibration_flaw(tmp_path):
    config = tmp_path / "pne.toml"  # the example with short end-to-end runs (the test's budget)
    text = (ROOT / "configs" / "audit_dpfedpne.toml").read_text()
    config.write_text(text.replace("trials = 10000", "trials = 100").replace("trials = 25000", "trials = 100"))
    assert _audit(config, tmp_path, "--trials", "500") == 1
    classic, analytic, matrix = load_report(tmp_path / "report.json")["targets"]
    assert matrix["verdict"]["status"] == "PASS"  # the planted-bug matrix target, correct code
    assert classic["verdict"]["status"] == "VIOLATION" and classic["verdict"]["analytic"]["status"] == "REFUTED"
    assert analytic["verdict"]["status"] == "PASS" and analytic["verdict"]["analytic"]["status"] == "PROVED"
    finding = next(f for f in classic["findings"] if f["id"] == "classic-calibration")
    # seed_fedpne.md 3.3(a): fails from epsilon = 8.42 at delta = 1e-5; true delta(10) = 2.27e-5
    assert finding["values"]["failure_threshold"] == pytest.approx(8.42, abs=0.01)
    assert finding["values"]["true_delta_at_claim"] == pytest.approx(2.27e-5, rel=0.01)
    assert all(p["outcome"] == "ran" for p in classic["probes"])  # mechanism-level and end-to-end
    assert {p["kind"] for p in classic["probes"]} == {"mechanism", "end-to-end"}
    # --trials sets the mechanism-level budget; the end-to-end probe keeps its configured one
    assert {p["kind"]: p["trials"] for p in classic["probes"]} == {"mechanism": 500, "end-to-end": 100}


def test_a_failed_probe_is_in_the_summary_and_the_target_cannot_pass(tmp_path, monkeypatch, capsys):
    """As when a worker is killed: the probe's run raises. The claim is proved analytically, yet the target
    is INCONCLUSIVE (exit 3) and the summary names the failed probe."""
    from attacks.probes.mechanisms import GaussianProbe

    def killed(self, world, trials, rng):
        raise RuntimeError("worker killed")

    monkeypatch.setattr(GaussianProbe, "scores", killed)
    config = tmp_path / "g.toml"
    config.write_text(GAUSSIAN_ONLY)
    assert main(["audit", str(config), "--out", str(tmp_path / "out")]) == 3
    out = capsys.readouterr().out
    assert "probe gaussian failed" in out and "INCONCLUSIVE" in out
    target = load_report(tmp_path / "out" / "report.json")["targets"][0]
    assert target["probes"][0]["outcome"] == "failed" and "worker killed" in target["probes"][0]["reason"]
    assert target["verdict"]["analytic"]["status"] == "PROVED" and target["verdict"]["rule"] == "probe-failed"
    assert target["findings"][0]["id"] == "probe-failed"


def test_a_changed_batch_size_is_not_served_from_the_saved_sections(tmp_path):
    """Batches are seeded by their index, so the batch size shapes the numbers: a rerun with another
    batch size must recompute the probe (and may reuse the accountants)."""
    out = tmp_path / "out"
    for name, size in (("a.toml", 2000), ("b.toml", 5000)):
        config = tmp_path / name
        config.write_text(GAUSSIAN_ONLY.replace("batch_size = 2000", f"batch_size = {size}"))
        _audit(config, out)
    reused = load_report(out / "report.json")["provenance"]["reused_sections"]
    assert "target-0/accounting" in reused and not any("probe" in r for r in reused)
