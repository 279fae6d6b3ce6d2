"""Every SuperNode connected before the ServerApp runs, as the accounting of a run assumes.

Flower's simulation engine (flwr 1.42, ``_main_loop``) starts the ServerApp's thread *before* it registers the
SuperNodes, so on a loaded machine the first round may sample from the nodes registered so far (seen: "Sampled 18
nodes (out of 37)" of 50), and an app that reads ``grid.get_node_ids()`` sizes itself from a partial population.
A deployment is accounted with all its nodes connected; ``with_all_nodes`` runs the project's ServerApp only once
``nodes`` SuperNodes are connected (or ``timeout`` seconds have passed: the transcript check then names the rounds
that sampled from fewer, ``attacks.flower_checks.sampler_check``). flwr is imported on first use.
"""

from __future__ import annotations

import time

WAIT_SECONDS = 300.0  # registering a SuperNode takes milliseconds; beyond this something else is wrong
POLL_SECONDS = 0.05


def wait_for_nodes(grid, nodes: int, timeout: float = WAIT_SECONDS) -> int:
    """Wait until ``grid`` has at least ``nodes`` connected nodes or ``timeout`` seconds pass; the count seen."""
    deadline = time.monotonic() + timeout
    while (seen := len(list(grid.get_node_ids()))) < nodes and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
    return seen


def with_all_nodes(server_app, nodes: int, timeout: float = WAIT_SECONDS):
    """A ServerApp that waits for ``nodes`` connected SuperNodes, then runs ``server_app`` (which is not changed)."""
    from flwr.serverapp import ServerApp

    class AllNodesServerApp(ServerApp):
        def __call__(self, grid, context):
            wait_for_nodes(grid, nodes, timeout)
            return server_app(grid=grid, context=context)

    return AllNodesServerApp()
