"""Run the example app (or any ServerApp/ClientApp pair) on Flower's simulation runtime.

We use Flower's simulation engine (``flwr.simulation.run_simulation``, Ray backend): it is Flower's own
runtime for a ServerApp and its ClientApps in one process tree, the ServerApp runs in this process (so
the recorder's transcript is at hand), and it needs no SuperLink/SuperNode processes or ports.
"""

from __future__ import annotations

import os

from dpfed.flower.example_app import AppSettings, build_client_app, build_server_app, supernodes
from dpfed.transcript import Transcript


def run_example(settings: AppSettings) -> dict:
    """Run the example app; returns ``{"transcript", "strategy", "initial", "final", "round_deltas", "rounds",
    "partitions"}`` (``round_deltas``: each round's released model minus its starting model, flat, for the
    round numbers ``rounds`` in order; ``partitions``: node id -> the client's partition id)."""
    from flwr.simulation import run_simulation

    # Ray starts its workers (Flower's ClientApp actors) at nice 15; on a machine shared with other work they
    # then starve behind it (measured: minutes per round on a loaded 2-core machine). Run them at normal
    # priority unless the user chose otherwise.
    os.environ.setdefault("RAY_worker_niceness", "0")
    transcript, result = Transcript(), {}
    run_simulation(server_app=build_server_app(settings, transcript, result),
                   client_app=build_client_app(settings), num_supernodes=supernodes(settings),
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                   "init_args": {"num_cpus": 2, "include_dashboard": False}})
    result["transcript"] = transcript
    deltas = result["strategy"].round_deltas
    result["round_deltas"] = [deltas[r] for r in sorted(deltas)]
    result["rounds"] = sorted(deltas)
    result["partitions"] = dict(result["strategy"].partitions)
    return result
