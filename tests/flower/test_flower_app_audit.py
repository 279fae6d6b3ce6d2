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
        "server-fixed", 6 + 4, 4, 2)  # the probe's 4 canaries are SuperNodes too
    assert target.mechanism.population == 10


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
    out = tmp_path / "audit.json"
    assert main(["flower", str(DIGITS), "--num-supernodes", "6", "--run-config",
                 'num-server-rounds=2 clipping="client-fixed"', "--canaries", "8", "--out", str(out)]) == 0
    audit = json.loads(out.read_text())
    assert audit["verdict"] == "PASS" and not [f for f in audit["findings"] if f["severity"] == "critical"]
    assert audit["details"]["config"]["kind"] == "client-fixed" and audit["details"]["population"] == 14
    assert len(audit["details"]["canaries"]["signs"]) == 8
