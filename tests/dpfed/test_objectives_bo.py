"""BO objectives: synthetic GP functions, SVM tuning (AUC checked against scikit-learn), landmine loader."""

import numpy as np
import pytest
import scipy.io
from sklearn.metrics import roc_auc_score
from sklearn.svm import SVC

from accounting.errors import ConfigurationError
from dpfed.objectives import SVMTuning, SyntheticGP, load_landmine, sklearn_shards
from dpfed.objectives.svm import rank_auc


def test_synthetic_functions_are_normalised_and_heterogeneity_is_tunable():
    same = SyntheticGP(5, 1, rng=0, heterogeneity=0.0, noise_var=0.0)
    grid = np.linspace(0, 1, 2001)[None, :, None].repeat(5, axis=0)
    v = same.true_values(grid)
    assert np.allclose(v, v[0]) and v.min() >= -1e-9 and v.max() <= 1 + 1e-9
    assert np.allclose(same.optimum, v.max(axis=1), atol=1e-4)
    spread = []
    for h in (0.05, 0.5):
        obj = SyntheticGP(5, 1, rng=1, heterogeneity=h, noise_var=0.0)
        spread.append(np.abs(obj.true_values(grid) - obj.true_values(grid)[0]).max())
    assert spread[0] < spread[1]  # 50 other seeds: the ratio was >= 4.3 in each (deterministic with this one)
    noisy = SyntheticGP(3, 2, rng=2, noise_var=0.01)
    obs, true = noisy.evaluate(np.full((3, 4000, 2), 0.3), rng=3)
    assert np.std(obs - true) == pytest.approx(0.1, rel=0.05)  # 12000 draws: rel. SE ~0.7%
    assert np.all(noisy.utility(true.max(axis=1)) >= 0)


def test_rank_auc_matches_sklearn():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 200)
    s = np.round(rng.standard_normal(200) + y, 1)  # rounded: ties
    assert rank_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_svm_objective_auc_equals_sklearn_and_is_cached():
    shards = sklearn_shards("breast-cancer", 10, seed=0)
    assert sum(len(y) for _, y in shards) == 569 and all(len(set(y)) == 2 for _, y in shards)
    obj = SVMTuning(shards, resolution=32)
    x = np.array([[[0.7, 0.3], [0.2, 0.9]]]).repeat(10, axis=0)
    values, true = obj.evaluate(x)
    assert values.shape == (10, 2) and np.array_equal(values, true) and obj.fits == 20
    xt, yt, xv, yv = obj._data[3]
    c, g = obj.hyperparameters(obj.cell(x[3, 0]))
    model = SVC(C=c, gamma=g).fit(xt, yt)
    assert values[3, 0] == pytest.approx(roc_auc_score(yv, model.decision_function(xv)), abs=1e-9)
    obj.evaluate(x + 1e-4)  # same grid cells: no new fits
    assert obj.fits == 20
    assert np.allclose(obj.utility(values.max(axis=1)), 1 - values.max(axis=1))
    digits = sklearn_shards("digits", 5)
    assert all(set(np.unique(y)) == {0, 1} for _, y in digits)


def test_landmine_loader_reads_a_generated_mat_file(tmp_path):
    rng = np.random.default_rng(5)
    feats = np.empty((1, 3), dtype=object)
    labels = np.empty((1, 3), dtype=object)
    for i in range(3):
        n = 20 + i
        feats[0, i] = rng.standard_normal((n, 9))
        labels[0, i] = (np.arange(n) % 5 == 0).astype(float)[:, None]
    path = tmp_path / "LandmineData.mat"
    scipy.io.savemat(path, {"feature": feats, "label": labels})
    fields = load_landmine(path)
    assert len(fields) == 3 and fields[1][0].shape == (21, 9) and fields[1][1].shape == (21,)
    assert np.allclose(fields[2][0], feats[0, 2])
    obj = SVMTuning(fields)
    values, _ = obj.evaluate(np.full((3, 1, 2), 0.5))
    assert np.all((values >= 0) & (values <= 1))


def test_landmine_loader_errors(tmp_path):
    with pytest.raises(ConfigurationError) as err:
        load_landmine(tmp_path / "missing.mat")
    assert err.value.field == "landmine_path"
    junk = tmp_path / "junk.mat"
    junk.write_bytes(b"not a mat file at all" * 10)
    with pytest.raises(ConfigurationError):
        load_landmine(junk)
    wrong = tmp_path / "wrong.mat"
    scipy.io.savemat(wrong, {"something": np.ones(3)})
    with pytest.raises(ConfigurationError) as err:
        load_landmine(wrong)
    assert "feature" in str(err.value)


def test_landmine_preset_runs_from_the_cli_on_a_generated_file(tmp_path, capsys):
    from reports.cli import main

    rng = np.random.default_rng(6)
    feats = np.empty((1, 29), dtype=object)
    labels = np.empty((1, 29), dtype=object)
    for i in range(29):
        feats[0, i] = rng.standard_normal((16, 9))
        labels[0, i] = (np.arange(16) % 4 == 0).astype(float)[:, None]
    path = tmp_path / "LandmineData.mat"
    scipy.io.savemat(path, {"feature": feats, "label": labels})
    argv = [
        "run",
        "dp-fts-de",
        "--preset",
        "landmine",
        "--landmine-path",
        str(path),
        "--rounds",
        "2",
        "--out",
        str(tmp_path),
        "--accountants",
        "rdp",
    ]
    assert main(argv) == 0
    assert "1 - AUC" in capsys.readouterr().out
    assert (tmp_path / "fts_dp-fts-de_landmine.json").exists()
