"""``dpaudit flower APP_DIR``'s project handling: the project read as flwr 1.42 reads it, the run config parsed with
flwr's syntax, the strategy the ServerApp starts observed in one run (on the in-process grid), the canary mod, and
every bad input refused in one line with exit 2 before Flower starts (no Ray simulation runs here: a few seconds)."""

import shutil
from pathlib import Path

import numpy as np
import pytest

flwr = pytest.importorskip("flwr", reason="flwr is not installed (pip install -e '.[flower]')")

from accounting.errors import ConfigurationError  # noqa: E402
from dpfed.flower.app_project import fused_run_config, parse_run_config, read_project  # noqa: E402
from reports.cli import main  # noqa: E402

APPS = Path(__file__).resolve().parents[1] / "flower_apps"
DIGITS = APPS / "digits_dp"


def test_reads_the_components_and_the_run_config():
    project = read_project(DIGITS)
    assert (project.name, project.serverapp, project.clientapp) == (
        "digits-dp", "digits_dp.server_app:app", "digits_dp.client_app:app")
    assert project.defaults["clipping"] == "server-fixed" and project.defaults["noise-multiplier"] == 1.0


def test_run_config_takes_flwrs_syntax():
    overrides = parse_run_config('num-server-rounds=2 clipping="client-fixed" noise-scale=0.5')
    assert overrides == {"num-server-rounds": 2, "clipping": "client-fixed", "noise-scale": 0.5}
    fused = fused_run_config(read_project(DIGITS), {**overrides, "noise-multiplier": 2})  # an int for a float
    assert fused["num-server-rounds"] == 2 and fused["noise-multiplier"] == 2 and fused["seed"] == 7


@pytest.mark.parametrize("text", ["rounds", "clipping=client-fixed", "a=1 b", "x.toml"])
def test_run_config_refuses_what_flwr_would_skip_or_reject(text):
    with pytest.raises(ConfigurationError):
        parse_run_config(text)


def test_fused_run_config_refuses_unknown_keys_and_other_types():
    project = read_project(DIGITS)
    with pytest.raises(ConfigurationError, match="not a key"):
        fused_run_config(project, {"num-rounds": 2})
    with pytest.raises(ConfigurationError, match="expected a int"):
        fused_run_config(project, {"num-server-rounds": 2.5})
    with pytest.raises(ConfigurationError, match="expected a str"):
        fused_run_config(project, {"clipping": 1})


@pytest.mark.parametrize("clipping, kind", [("server-fixed", "server-fixed"), ("client-fixed", "client-fixed"),
                                            ("server-adaptive", "server-adaptive")])
def test_observes_the_strategy_the_serverapp_starts(clipping, kind, monkeypatch):
    """One real run (on the in-process grid): the strategy the main built is observed where it starts, and its
    first round gives the population and the realised sample."""
    from attacks.flower_checks.run_checks import run_config_of
    from dpfed.flower.read import wrapper_kind
    from dpfed.flower.run import RunSettings, run_app
    from tests.flower.inprocess_grid import flower_runtime_in_process

    flower_runtime_in_process(monkeypatch)
    project = read_project(DIGITS)
    run = run_app(project, fused_run_config(project, {"clipping": clipping, "num-server-rounds": 2}), RunSettings(12))
    [started] = run.recorded()
    assert wrapper_kind(started.observed.strategy) == kind and started.observed.rounds == 2
    config, configured = run_config_of(started)
    assert (config.nodes, config.sampled, configured, config.clip) == (12, 4, 4, 0.5)
    assert config.noise_multiplier == pytest.approx(1.0, rel=1e-12)  # adaptive: z_u and sigma_b combine to the user's z


def _project_copy(tmp_path, edit):
    target = tmp_path / "app"
    shutil.copytree(DIGITS, target, ignore=shutil.ignore_patterns("__pycache__"))
    toml = target / "pyproject.toml"
    toml.write_text(edit(toml.read_text()))
    return target


def _refused(capsys, *argv) -> str:
    assert main(["flower", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_bad_projects_and_run_configs_exit_2_before_flower_starts(tmp_path, capsys, monkeypatch):
    import dpfed.flower.run

    monkeypatch.setattr(dpfed.flower.run, "run_app", lambda *a, **k: pytest.fail("Flower started"))
    assert "no pyproject.toml" in _refused(capsys, str(tmp_path), "--num-supernodes", "4")
    no_client = _project_copy(tmp_path, lambda t: t.replace('clientapp = "digits_dp.client_app:app"\n', ""))
    assert "clientapp" in _refused(capsys, str(no_client), "--num-supernodes", "4")
    bad_ref = tmp_path / "bad"
    shutil.copytree(_project_copy(tmp_path / "x", lambda t: t.replace("client_app:app", "client_app:nothing")),
                    bad_ref)
    assert "nothing" in _refused(capsys, str(bad_ref), "--num-supernodes", "4")
    assert "key=value" in _refused(capsys, str(DIGITS), "--num-supernodes", "4", "--run-config", "rounds")
    assert "not a key" in _refused(capsys, str(DIGITS), "--num-supernodes", "4", "--run-config", "rounds=2")
    assert "use at least 8" in _refused(capsys, str(DIGITS), "--num-supernodes", "4", "--canaries", "2")
    assert "empty" in _refused(capsys, str(DIGITS), "--num-supernodes", "4", "--out", "")


def test_canary_mod_answers_canaries_and_hides_them_from_real_clients():
    from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
    from flwr.supercore.task_identity import TaskIdentity

    from dpfed.flower.canaries import canary_direction, canary_signs
    from dpfed.flower.canary_mod import CLIP_KEY, MARKER, CanaryMod

    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, 0
    current = [np.zeros((3, 4), np.float32), np.ones(2, np.float32)]
    content = RecordDict({"arrays": ArrayRecord(current), "config": ConfigRecord({CLIP_KEY: 0.5, "lr": 0.1})})
    mod = CanaryMod(real=6, canaries=4, seed=3)

    def context(partition):
        return Context(run_id=1, node_id=5, node_config={"partition-id": partition, "num-partitions": 10},
                       state=RecordDict(), run_config={})

    reply = mod(Message(content=content, dst_node_id=5, message_type="train"), context(7),
                lambda m, c: pytest.fail("the ClientApp saw a canary"))
    update = np.concatenate([a.ravel() for a in reply.content["arrays"].to_numpy_ndarrays()]) - np.r_[
        np.zeros(12), np.ones(2)]
    expected = 0.5 * canary_signs(4, 3)[1] * canary_direction(1, 14, 3)  # partition 7 = canary 1, norm C = 0.5
    assert update == pytest.approx(expected, abs=1e-6) and dict(reply.content["metrics"]) == {MARKER: 1}
    seen = {}
    mod(Message(content=content, dst_node_id=5, message_type="train"), context(2),
        lambda m, c: seen.update(config=dict(m.content["config"]), node=dict(c.node_config)))
    assert seen == {"config": {"lr": 0.1}, "node": {"partition-id": 2, "num-partitions": 6}}
