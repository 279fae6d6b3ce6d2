"""The adaptive wrappers' clipped count, measured through Flower's own code (flwr 1.42's
``DifferentialPrivacyServerSideAdaptiveClipping``, Message API and legacy): its sensitivity under replace-one and
add/remove, against the 1/2 (centred bits, Andrew et al. 2021) that Flower's split of z assumes, and the effective
multiplier that follows.

The noisy count is read back from the clip Flower sets: C_1 = C_0 exp(-eta (f - q)) with f the noisy count over the
replies, so f n = n (q - log(C_1 / C_0) / eta). NumPy's generator is seeded alike for the two neighbouring sets of
replies, so the count noise is the same draw and the difference of the two noisy counts is the change of the count
itself (exact up to float rounding; nothing random is compared).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("flwr")

from attacks.flower_checks.adaptive_count import count_noise_finding, effective_multipliers  # noqa: E402

LR, QUANTILE, CLIP = 0.2, 0.5, 1.0


def _noisy_count(update_norms, z: float, m: int, count_std: float, seed: int = 7) -> float:
    """Run Flower's wrapper on replies whose updates have ``update_norms`` and return the noisy clipped count it
    used (read back from its new clip)."""
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.serverapp.strategy import DifferentialPrivacyServerSideAdaptiveClipping, FedAvg
    from flwr.supercore.task_identity import TaskIdentity

    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, 1  # as Flower's runtime sets them
    wrapper = DifferentialPrivacyServerSideAdaptiveClipping(
        FedAvg(), noise_multiplier=z, num_sampled_clients=m, initial_clipping_norm=CLIP,
        target_clipped_quantile=QUANTILE, clip_norm_lr=LR, clipped_count_stddev=count_std)
    wrapper.current_arrays = ArrayRecord([np.zeros(3, dtype=np.float32)])
    replies = []
    for node, norm in enumerate(update_norms, start=2):
        request = Message(RecordDict({"arrays": ArrayRecord([np.zeros(3, dtype=np.float32)])}), dst_node_id=node,
                          message_type="train")
        update = np.array([norm, 0.0, 0.0], dtype=np.float32)
        content = RecordDict({"arrays": ArrayRecord([update]), "metrics": MetricRecord({"num-examples": 1})})
        reply = Message(content, reply_to=request)
        replies.append(reply)
    np.random.seed(seed)
    wrapper.aggregate_train(1, replies)
    fraction = QUANTILE - math.log(wrapper.clipping_norm / CLIP) / LR
    return fraction * len(replies)


def _legacy_noisy_count(update_norms, z: float, m: int, count_std: float, seed: int = 7) -> float:
    """As ``_noisy_count``, through the legacy ``flwr.server.strategy`` wrapper's ``aggregate_fit``."""
    from flwr.common import Code, FitRes, Status, ndarrays_to_parameters
    from flwr.server.strategy import DifferentialPrivacyServerSideAdaptiveClipping, FedAvg

    wrapper = DifferentialPrivacyServerSideAdaptiveClipping(
        FedAvg(), noise_multiplier=z, num_sampled_clients=m, initial_clipping_norm=CLIP,
        target_clipped_quantile=QUANTILE, clip_norm_lr=LR, clipped_count_stddev=count_std)
    wrapper.current_round_params = [np.zeros(3, dtype=np.float32)]
    results = [(None, FitRes(Status(Code.OK, ""), ndarrays_to_parameters([np.array([norm, 0, 0], dtype=np.float32)]),
                             1, {})) for norm in update_norms]
    np.random.seed(seed)
    wrapper.aggregate_fit(1, results, [])
    fraction = QUANTILE - math.log(wrapper.clipping_norm / CLIP) / LR
    return fraction * len(results)


@pytest.mark.parametrize("noisy_count", [_noisy_count, _legacy_noisy_count], ids=["message-api", "legacy"])
def test_flowers_clipped_count_has_sensitivity_one_under_both_relations_not_the_half_its_split_assumes(noisy_count):
    z, m, count_std = 1.0, 4, 1.0
    base = [0.5, 0.5, 3.0, 3.0]  # two replies below the clip, two above (clipped: bit 1)
    replaced = [0.5, 3.0, 3.0, 3.0]  # replace-one: one client below the clip replaced by one above it
    added = base + [3.0]  # add/remove: one more client, above the clip
    count = noisy_count(base, z, m, count_std)
    replace_change = noisy_count(replaced, z, m, count_std) - count
    add_change = noisy_count(added, z, m, count_std) - count
    assert replace_change == pytest.approx(1.0, abs=1e-6)
    assert add_change == pytest.approx(1.0, abs=1e-6)  # centred bits (b - 1/2) would change by 1/2 here
    # with these sensitivities, the effective multiplier from first principles (GDP mu of the two Gaussians)
    from flwr.supercore.differential_privacy import compute_adaptive_noise_params

    sigma_b, z_u = compute_adaptive_noise_params(z, m, count_std)
    mu_add_remove = math.hypot(1.0 / z_u, add_change / sigma_b)
    mu_replace = math.hypot(2.0 / z_u, replace_change / sigma_b)
    multipliers = effective_multipliers(z_u, sigma_b)
    assert multipliers["assumed"] == pytest.approx(z)  # Flower's split, read back
    assert multipliers["add-remove"] == pytest.approx(1.0 / mu_add_remove)
    assert multipliers["replace-one"] == pytest.approx(2.0 / mu_replace)
    assert multipliers["replace-one"] == pytest.approx(z)  # the split holds under replace-one
    assert multipliers["add-remove"] == pytest.approx((0.75 + 1.0) ** -0.5)  # z_u^-2 = 1 - 1/4; sigma_b = 1
    assert multipliers["add-remove"] < z


def test_finding_states_both_multipliers_and_is_medium_only_for_an_add_remove_claim():
    from dpfed.flower.config import FlowerDpConfig

    z_u = (1.0 - 0.25) ** -0.5  # z = 1 with sigma_b = 1
    config = FlowerDpConfig("server-adaptive", rounds=3, nodes=20, sampled=4, noise_multiplier=1.0, clip=1.0,
                            update_noise_multiplier=z_u)
    info = count_noise_finding(config, 1e-5)
    assert info.severity == "info" and info.code == "adaptive-count-noise"
    assert info.values["clipped_count_stddev"] == pytest.approx(1.0)
    assert info.values["effective_noise_multiplier_add_remove"] == pytest.approx(1.75 ** -0.5)
    claimed = count_noise_finding(config, 1e-5, ("no-amplification",))
    assert claimed.severity == "medium"
    from dp_accounting import dp_event, pld  # an independent reference: 3 Gaussians at the effective multiplier

    accountant = pld.PLDAccountant()
    accountant.compose(dp_event.GaussianDpEvent(1.75 ** -0.5), 3)
    reference = accountant.get_epsilon(1e-5)
    assert claimed.values["add_remove_epsilons"]["no-amplification"] == pytest.approx(reference, rel=0.01)
    assert count_noise_finding(FlowerDpConfig("server-fixed", 3, 20, 4, 1.0), 1e-5) is None


@pytest.mark.slow  # one audit (seconds: the accountants of what ran)
def test_an_adaptive_apps_audit_states_the_effective_multiplier_in_its_summary(tmp_path, monkeypatch, capsys):
    """``tests/flower_apps/digits_dp`` (written outside this project) with Flower's server-side adaptive wrapper, z = 1
    and sigma_b = 2 (its run config): the summary's line gives z_u from Flower's own split and the add/remove
    multiplier (z_u^-2 + sigma_b^-2)^-1/2."""
    import json
    from pathlib import Path

    from flwr.supercore.differential_privacy import compute_adaptive_noise_params

    from reports.cli import main
    from tests.flower.inprocess_grid import flower_runtime_in_process

    flower_runtime_in_process(monkeypatch)
    out = tmp_path / "audit" / "report.json"
    main(["flower", str(Path(__file__).resolve().parents[1] / "flower_apps" / "digits_dp"), "--num-supernodes", "6",
          "--run-config", 'clipping="server-adaptive" num-server-rounds=2', "--out", str(out.parent), "--no-progress"])
    sigma_b, z_u = compute_adaptive_noise_params(1.0, 4, 2.0)
    expected = (z_u ** -2 + sigma_b ** -2) ** -0.5
    [finding] = [f for f in json.loads(out.read_text())["findings"] if f["code"] == "adaptive-count-noise"]
    assert finding["values"]["effective_noise_multiplier_add_remove"] == pytest.approx(expected)
    assert finding["values"]["update_noise_multiplier"] == pytest.approx(z_u)
    [line] = [x for x in capsys.readouterr().out.splitlines() if "adaptive-count-noise" in x]
    assert f"the effective multiplier is {expected:.4g}" in line and f"z_u = {z_u:.4g}" in line
