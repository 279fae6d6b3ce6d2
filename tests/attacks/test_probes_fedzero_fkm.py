"""Probes of FKM/DP-FKM and FedZero/DP-FedZero: exact reconstruction under shared-randomness replay,
non-private versions at the trial ceiling, private ones never above their tight epsilon."""

import math
from pathlib import Path

import numpy as np
import pytest

from accounting.errors import ConfigurationError
from accounting.mechanisms import Gaussian
from attacks.attack import run_attack
from attacks.planner import bonferroni_ceiling
from attacks.probes import get_probe
from attacks.probes.fedzero import privacy_remark_answer, recover_scalars_from_iterates
from attacks.probes.fkm import _public_directions, reconstruct_released_losses
from dpfed.fkm import FKMConfig, run_dp_fkm

NEW_PROBES = [
    "fkm-loss",
    "fkm-end-to-end",
    "fkm-dataset-end-to-end",
    "fkm-nonprivate",
    "fedzero-scalar",
    "fedzero-end-to-end",
    "fedzero-record",
    "fedzero-broadcast",
    "fedzero-nonprivate",
    "fedzero-broadcast-leak",
]


@pytest.mark.parametrize("name", NEW_PROBES)
def test_probe_is_registered_seeded_and_describes_itself(name):
    probe = get_probe(name)
    a = probe.scores(1, 200, np.random.default_rng(3))
    b = probe.scores(1, 200, np.random.default_rng(3))
    assert a.shape == (200,) and np.array_equal(a, b) and np.all(np.isfinite(a))
    info = probe.metadata(1e-5)
    assert info["threat_model"] in ("server view", "broadcast view", "output only")
    private = "nonprivate" not in name and "leak" not in name
    assert (info["mechanism"] is not None) == private
    assert info["true_epsilon"] is not None and math.isfinite(info["true_epsilon"]) == private  # non-private: inf


def test_fkm_reconstruction_from_plays_is_the_released_loss():
    config = FKMConfig(dim=4, horizon=8, exploration=0.5, step=1e-3)
    run = run_dp_fkm(config, 2, mechanism=Gaussian(1.5, 2.0), runs=500, shared_directions=True, privacy_rng=9)
    released = np.stack(run.transcript.payloads("loss"))[:-1]
    rebuilt = reconstruct_released_losses(run, _public_directions(2, 8, 4))
    assert np.allclose(rebuilt, released, atol=1e-9)


def test_fedzero_broadcast_view_recovers_every_workers_upload():
    probe = get_probe("fedzero-broadcast", rounds=6)
    run = probe._run(1, 300, np.random.default_rng(0))
    uploads = np.stack(
        [[m.payload for m in run.transcript.filter(name="scalar", sender=f"agent{j}")] for j in range(3)], axis=-1
    )  # (rounds, runs, m)
    recovered = recover_scalars_from_iterates(run, probe.public_seed) * probe.rate
    assert np.allclose(recovered, uploads, atol=1e-8)


def test_fkm_end_to_end_statistic_is_the_gaussian_of_c5():
    # shift 2B = 2 and std 2 B sigma; 20000 trials per world, 5 standard errors (false failure < 1e-5)
    probe = get_probe("fkm-end-to-end", noise_multiplier=1.5)
    rng = np.random.default_rng(1)
    out, inn = probe.scores(0, 20_000, rng), probe.scores(1, 20_000, rng)
    se = np.sqrt(out.var() / out.size + inn.var() / inn.size)
    assert abs(inn.mean() - out.mean() - 2.0) < 5 * se
    assert out.std() == pytest.approx(3.0, rel=0.03)


@pytest.mark.parametrize("name", ["fkm-nonprivate", "fedzero-nonprivate", "fedzero-broadcast-leak"])
def test_non_private_versions_reach_the_trial_ceiling(name):
    result = run_attack(get_probe(name), trials=2_000, seed=0, delta=1e-5)
    assert result.best_rigorous() == pytest.approx(bonferroni_ceiling(2_000, 1e-5), rel=1e-9)


@pytest.mark.parametrize("name", ["fkm-end-to-end", "fedzero-end-to-end", "fedzero-scalar"])
def test_private_probes_stay_below_the_tight_epsilon(name):
    # rigorous and (exact-model) GDP bounds at confidence 0.999: each exceeds a correct implementation's
    # tight epsilon with probability <= 1e-3
    probe = get_probe(name)
    result = run_attack(probe, trials=20_000, seed=4, confidence=0.999)
    for bound in result.bounds:
        if bound.method in ("clopper-pearson", "gdp"):
            assert bound.epsilon <= result.true_epsilon
    assert result.best_rigorous() > 0.3 * result.true_epsilon  # and the probe does detect the canary


def test_privacy_remark_is_answered_by_the_probe():
    answer = privacy_remark_answer(trials=1_000, seed=0)
    assert "not a differential-privacy property" in answer["answer"]
    assert answer["server_view_epsilon_lower_bound"] == pytest.approx(answer["ceiling"])
    assert answer["broadcast_view_epsilon_lower_bound"] == pytest.approx(answer["ceiling"])


def test_bad_probe_parameters_are_configuration_errors():
    with pytest.raises(ConfigurationError):
        get_probe("fedzero-end-to-end", view="client")
    with pytest.raises(ConfigurationError):
        get_probe("fedzero-broadcast", geometry="l1")
    with pytest.raises(ConfigurationError):
        get_probe("fkm-end-to-end", canary_round=20)


CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("attack_f[ek][dm]*.toml"))


def test_example_attack_configs_run():
    from reports.cli import main

    assert len(CONFIGS) == 7
    for path in CONFIGS:
        # 400 trials: the estimator's ceiling (3.94 at delta 1e-5) exceeds the record-level claim 3.70,
        # so the verdict can be PASS (at 300 it is 3.65: INCONCLUSIVE, the claim cannot be tested)
        code = main(["attack", "--config", str(path), "--trials", "400"])
        assert code == (1 if "nonprivate" in path.name else 0), path.name  # non-private: VIOLATION of eps 2
