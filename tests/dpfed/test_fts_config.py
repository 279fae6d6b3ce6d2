"""Configuration validation, presets/TOML, and the ``dpaudit run`` FTS sub-commands."""

import json

import numpy as np
import pytest

from accounting.errors import ConfigurationError
from dpfed.fts import FTSConfig, run_fts
from reports.cli import main


@pytest.mark.parametrize(
    "changes,field",
    [
        (dict(rate=0.0), "rate"),
        (dict(rate=1.5), "rate"),
        (dict(clip=-1.0), "clip"),
        (dict(subregions=3, dim=2), "subregions"),
        (dict(noise_multiplier=0), "noise_multiplier"),
        (dict(algorithm="dp-foo"), "algorithm"),
        (dict(population=3, num_agents=5), "population"),
        (dict(objective="landmine", landmine_path=None), "landmine_path"),
        (dict(mixing="sometimes"), "mixing"),
    ],
)
def test_bad_configurations_name_the_field(changes, field):
    with pytest.raises(ConfigurationError) as err:
        FTSConfig(**changes)
    assert err.value.field == field


def test_presets_and_toml(tmp_path):
    cfg = FTSConfig.from_preset("landmine", landmine_path="x.mat")
    assert (
        cfg.num_agents,
        cfg.rounds,
        cfg.num_features,
        cfg.subregions,
        cfg.rate,
        cfg.noise_multiplier,
        cfg.clip,
    ) == (29, 60, 100, 4, 0.35, 1.0, 22.0)
    assert cfg.dp_delta == pytest.approx(29**-1.1) and cfg.per_vector_clip == pytest.approx(11.0)
    path = tmp_path / "c.toml"
    path.write_text('[fts]\nobjective = "synthetic"\ndim = 1\nrounds = 3\n')
    assert FTSConfig.from_toml(path).rounds == 3
    path.write_text('objective = "synthetic"\nbogus = 1\n')
    with pytest.raises(ConfigurationError) as err:
        FTSConfig.from_toml(path)
    assert err.value.field == "bogus"
    with pytest.raises(ConfigurationError) as err:
        FTSConfig.from_preset("nope")
    assert err.value.field == "preset"


def test_dp_fts_uses_one_subregion_and_full_clip():
    cfg = FTSConfig(algorithm="dp-fts", subregions=4)
    assert cfg.effective_subregions == 1 and cfg.mechanism().clip == 22.0


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "dp-fts-de", "--preset", "landmine"],
        ["run", "dp-fts-de", "--preset", "landmine", "--landmine-path", "/no/such/LandmineData.mat"],
        ["run", "dp-fts-de", "--preset", "nosuch"],
        ["run", "fts", "--config", "/no/such.toml"],
        ["run", "dp-fts", "--runs", "0"],
        ["run", "dp-fts", "--rounds", "-3"],
    ],
)
def test_cli_bad_input_exits_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "text,field", [("rate = 1.5", "rate"), ("clip = -2.0", "clip"), ("subregions = 3\ndim = 2", "subregions")]
)
def test_cli_bad_config_values_exit_2(tmp_path, capsys, text, field):
    path = tmp_path / "bad.toml"
    path.write_text('objective = "synthetic"\n' + text + "\n")
    assert main(["run", "dp-fts-de", "--config", str(path), "--out", str(tmp_path)]) == 2
    assert field in capsys.readouterr().err


SMALL = 'objective = "synthetic"\ndim = 1\nrounds = 2\n'


@pytest.mark.parametrize("algorithm", ["fts", "fts-de", "ts"])
@pytest.mark.parametrize("text,field", [(SMALL + "rate = 0.5", "rate"),
                                        (SMALL + "noise_multiplier = 3.0", "noise_multiplier"),
                                        ("[fts]\n" + SMALL + "clip = 2.0", "clip"),
                                        (SMALL + 'sampling = "fixed-size"', "sampling")])
def test_cli_non_private_run_refuses_privacy_keys_it_would_ignore(tmp_path, capsys, algorithm, text, field):
    """A non-private run has no mechanism: these keys were accepted and silently ignored."""
    path = tmp_path / "c.toml"
    path.write_text(text + "\n")
    assert main(["run", algorithm, "--config", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"error: {field}:" in err and not (tmp_path / "out").exists()


def test_cli_run_writes_json_and_plot(tmp_path, capsys):
    path = tmp_path / "small.toml"
    path.write_text(
        'objective = "synthetic"\ndim = 1\nnum_agents = 5\nrounds = 4\ninit_points = 2\n'
        "num_features = 20\nlocal_num_features = 20\nsubregions = 2\ncandidates = 50\n"
    )
    assert (
        main(
            [
                "run",
                "dp-fts-de",
                "--config",
                str(path),
                "--runs",
                "2",
                "--out",
                str(tmp_path),
                "--accountants",
                "rdp",
                "--save-transcript",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "simple regret" in out and "rdp" in out
    data = json.loads((tmp_path / "fts_dp-fts-de_synthetic.json").read_text())
    assert len(data["utility_mean"]) == 5 and data["releases"] == [4, 4]
    assert data["accounting"][0]["name"] == "rdp"
    assert len(data["transcript"]["messages"]) == 4 * 6
    assert (tmp_path / "fts_dp-fts-de_synthetic.png").stat().st_size > 1000
    assert not list(tmp_path.glob(".*.tmp"))


def test_python_api_result_fields():
    cfg = FTSConfig(
        objective="synthetic",
        dim=1,
        num_agents=4,
        rounds=3,
        init_points=2,
        num_features=10,
        local_num_features=10,
        subregions=2,
        candidates=20,
    )
    res = run_fts(cfg, np.random.default_rng(0))
    assert res.utility.shape == (4,) and res.queries.shape == (4, 5, 1)
    assert res.used_broadcast[0].all()  # p_1 = 0: the first iteration follows the broadcast
    assert np.all(res.utility[1:] <= res.utility[:-1] + 1e-12)  # best-so-far regret never increases


def test_initial_design_and_ablation_options():
    base = dict(
        objective="synthetic",
        dim=1,
        num_agents=4,
        rounds=2,
        init_points=6,
        num_features=10,
        local_num_features=10,
        subregions=2,
        candidates=20,
    )
    de = run_fts(FTSConfig(algorithm="fts-de", **base), 0)
    ts_sub = run_fts(FTSConfig(algorithm="ts", init="subregion", explore_uniform=True, **base), 0)
    ts = run_fts(FTSConfig(algorithm="ts", **base), 0)
    for res in (de, ts_sub):
        init = res.queries[:, :6, 0]
        assert np.all(init[0::2] <= 0.5) and np.all(init[1::2] >= 0.5)
    assert np.any(ts.queries[0::2, :6, 0] > 0.5)  # whole-domain design by default for ts
    assert ts_sub.composition() is None and not ts_sub.used_broadcast.any()
    with pytest.raises(ConfigurationError) as err:
        FTSConfig(explore_uniform="yes")
    assert err.value.field == "explore_uniform"
