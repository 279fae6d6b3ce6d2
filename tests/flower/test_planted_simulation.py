"""A planted app on Flower's own runtime (``flwr.simulation.run_simulation``, Ray): the ServerApp starts its
strategy wrapped in our recorder, the ClientApps run as Flower runs them (node ids, ``partition-id`` and
``num-partitions`` from Flower), and the transcript check names the planted bug, as on the in-process grid.

One run of 5 rounds, 20 nodes (20-70 s on 2 cores, most of it Ray's start and stop). The bug leaves 2 of 530
numbers without noise, found with p below 1e-60; before the seed was fixed, a false finding of another statistical
kind had probability at most 4 alpha = 4e-3.
"""

import pytest

pytest.importorskip("flwr", reason="flwr is not installed (pip install -e '.[flower]')")
pytestmark = pytest.mark.slow


def test_bias_unnoised_is_found_on_flowers_simulation_engine():
    import os

    from flwr.simulation import run_simulation

    from attacks.flower_checks.transcript_check import assumptions_from_config, check_transcript
    from dpfed.flower.read import config_from_strategy
    from dpfed.flower.recorder import recording_strategy
    from dpfed.flower.records import releases
    from tests.flower import planted_apps as app

    os.environ.setdefault("RAY_worker_niceness", "0")
    cfg, result = app.settings(bug="bias-unnoised", seed=3), {}
    run_simulation(server_app=app.server_app(cfg, wrap=recording_strategy, result=result),
                   client_app=app.make_client_app(cfg), num_supernodes=cfg["nodes"],
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                   "init_args": {"num_cpus": 2, "include_dashboard": False}})
    strategy = result["strategy"]
    config, _ = config_from_strategy(strategy, nodes=cfg["nodes"], rounds=cfg["rounds"], weighting="equal")
    records = releases(strategy.transcript)
    assert [r for r, _ in records] == [1, 2, 3, 4, 5]
    assert records[0][1]["tensors"] == [["0.weight", 480], ["0.bias", 16], ["2.weight", 32], ["2.bias", 2]]
    findings = check_transcript(strategy.transcript, assumptions_from_config(config))
    assert [(f.code, f.severity, f.values["parts_below"]) for f in findings] == [
        ("noise-part-below-accounted", "critical", ["tensor 2.bias"])]
