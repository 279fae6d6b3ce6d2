"""``dpaudit flower APP_DIR`` and the ``flower-app`` audit target on the outside app (tests/flower_apps/digits_dp,
written without any of our code), run as ``flwr run`` runs it.

Fast: the target's strict keys, its path relative to the configuration, its --allow-code opt-in, and a runner
that names no system. Slow (one Flower run, 6 SuperNodes, 2 rounds, on the in-process grid of
``tests/flower/inprocess_grid.py``): PASS (exit 0) with client-side clipping and 8 canary SuperNodes; the correct
app fails the transcript's noise test (lower-tail chi-square at 1e-3 per round, Bonferroni over rounds) with
probability below 1e-3. Server-side clipping (PASS) and half the noise (VIOLATION), on Flower's simulation
engine, are the README's commands (``tests/test_readme_flower_commands.py``).
"""

import json
from pathlib import Path

import pytest

flwr = pytest.importorskip("flwr", reason="flwr is not installed (pip install -e '.[flower]')")

from accounting.errors import ConfigurationError  # noqa: E402
from reports.audit.config import parse_config  # noqa: E402
from reports.audit.targets import build_target  # noqa: E402
from reports.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DIGITS = ROOT / "tests" / "flower_apps" / "digits_dp"
TARGET = """
[[target]]
algorithm = "flower-app"
[target.parameters]
app = "flower_apps/digits_dp"
num_supernodes = 6
{extra}
[target.parameters.run_config]
num-server-rounds = 2
clients-per-round = 10  # every node, canaries included: the canaries keep the deployment's rate (6 of 6)
[target.claim]
epsilon = 20.0
delta = 1e-5
neighbouring = "replace-one"
unit = "one client"
[[target.probes]]
name = "flower-app"
kind = "end-to-end"
trials = 4
"""


def _spec(extra: str = "", allow_code: bool = True):
    config = parse_config(TARGET.format(extra=extra), "test", allow_code, base_dir=str(ROOT / "tests"))
    return config["targets"][0]


def test_target_reads_the_app_relative_to_the_configuration():
    target = build_target(_spec())
    assert target.app == str(ROOT / "tests" / "flower_apps" / "digits_dp")
    assert (target.config.kind, target.config.nodes, target.config.sampled, target.releases) == (
        "server-fixed", 6, 6, 2)  # accounted as the deployment: the probe's 4 canary SuperNodes are the audit's
    assert target.mechanism.population == 6 and target.mechanism.rate == 1.0


def test_target_needs_allow_code_and_strict_keys():
    import dataclasses

    with pytest.raises(ConfigurationError, match="allow-code"):
        build_target(_spec(allow_code=False))
    with pytest.raises(ConfigurationError, match="rounds"):
        build_target(_spec("rounds = 3"))  # not a key of the target: the app's rounds are its run config's
    spec = _spec()
    with pytest.raises(ConfigurationError, match="not a key"):
        build_target(dataclasses.replace(spec, parameters={**spec.parameters, "run_config": {"num-rounds": 2}}))


def test_runner_names_no_system():
    text = (ROOT / "reports" / "audit" / "runner.py").read_text().lower()
    for system in ("flower", "fts", "pne", "duets", "fedzero", "fkm", "own_probe"):
        assert system not in text, system


@pytest.mark.slow
def test_client_side_clipping_with_canaries_passes_on_the_outside_app(tmp_path, monkeypatch):
    from tests.flower.inprocess_grid import flower_runtime_in_process

    flower_runtime_in_process(monkeypatch)  # the same command on the in-process grid (no Ray start and stop)
    out = tmp_path / "audit"
    assert main(["flower", str(DIGITS), "--num-supernodes", "6", "--run-config",
                 'num-server-rounds=2 clients-per-round=14 clipping="client-fixed"', "--canaries", "8",
                 "--out", str(out)]) == 0
    audit = json.loads((out / "report.json").read_text())
    assert audit["verdict"] == "PASS" and not [f for f in audit["findings"] if f["severity"] == "critical"]
    assert audit["details"]["config"]["kind"] == "client-fixed" and audit["details"]["population"] == 6
    assert audit["details"]["canary_run"] == {"supernodes": 14, "canaries": 8, "sampled": [14]}
    assert len(audit["details"]["canaries"]["signs"]) == 8


FRACTION_TARGET = """
[[target]]
algorithm = "flower-app"
accountants = ["dpa-rdp"]
{probes}
[target.parameters]
app = "flower_apps/fraction_dp"
num_supernodes = 10
[target.parameters.run_config]
num-server-rounds = 2
noise-scale = {scale}
[target.claim]
epsilon = 20.0
delta = 1e-5
neighbouring = "replace-one"
unit = "one client"
"""


def _audit_report(tmp_path, monkeypatch, probes: str, scale: float) -> tuple[int, dict]:
    """``dpaudit audit`` of ``tests/flower_apps/fraction_dp`` (FedAvg training half of 10 nodes) on the in-process
    grid, the target's ``[[target.probes]]`` replaced by ``probes``."""
    import attacks.probes.flower as probe
    from tests.flower.inprocess_grid import flower_runtime_in_process

    monkeypatch.setattr(probe, "_RUNS", {})
    flower_runtime_in_process(monkeypatch)
    config = ROOT / "tests" / f"flower-target-{len(list(tmp_path.iterdir()))}.toml"
    config.write_text(FRACTION_TARGET.format(probes=probes, scale=scale), encoding="utf-8")
    try:
        code = main(["audit", str(config), "--allow-code", "--no-progress", "--out", str(tmp_path / config.stem)])
    finally:
        config.unlink()
    return code, json.loads((tmp_path / config.stem / "report.json").read_text())["targets"][0]


def test_without_probes_the_target_runs_the_checks_of_its_run(tmp_path, monkeypatch):
    """No ``[[target.probes]]``: the target runs its default probe, ``flower-app`` without canaries, so the
    configuration and transcript checks decide the verdict (half the noise: VIOLATION, where it was once "PASS, no
    findings ... no probe ran"); ``probes = []`` opts out of them, leaving the implementation untested:
    INCONCLUSIVE (exit 3), not a plain PASS."""
    code, correct = _audit_report(tmp_path, monkeypatch, "", 1.0)
    assert code == 0 and correct["verdict"]["status"] == "PASS"
    assert [(p["name"], p["outcome"], p["trials"]) for p in correct["probes"]] == [("flower-app", "ran", 0)]
    assert {f["values"].get("code") for f in correct["findings"]} >= {"weighted-by-examples", "accounted-rows"}
    code, halved = _audit_report(tmp_path, monkeypatch, "", 0.5)
    assert code == 1 and halved["verdict"]["status"] == "VIOLATION"
    critical = {f["values"].get("code") for f in halved["findings"] if f["severity"] == "critical"}
    assert "noise-below-accounted" in critical
    code, opted_out = _audit_report(tmp_path, monkeypatch, "probes = []", 0.5)
    assert code == 3 and opted_out["verdict"]["status"] == "INCONCLUSIVE"
    assert opted_out["verdict"]["rule"] == "untested-implementation" and not opted_out["probes"]
