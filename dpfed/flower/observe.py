"""Observe every strategy a ServerApp runs, where Flower (1.42) starts it, without changing the project's code.

``observing_strategies(on_start)`` patches, for the duration of a ``with`` block, the three places where a
Flower strategy starts running rounds:

- ``flwr.serverapp.strategy.Strategy.start`` (the Message API: ``@app.main()`` calls ``strategy.start``);
- ``flwr.server.workflow.DefaultWorkflow.__call__`` (a legacy strategy in a ``LegacyContext``, run by the default
  fit workflow or by ``SecAggPlusWorkflow`` / ``SecAggWorkflow``: then the server sees only the sum);
- ``flwr.server.Server.fit`` (the legacy ``server_fn`` / ``ServerAppComponents`` API, through ``start_grid``).

Each start becomes an ``ObservedStrategy`` handed to ``on_start``, which returns the strategy to run instead
(a recorder around it) or raises to stop the app; the ServerApp's main may use the grid, wait for nodes, or
start several strategies. A strategy class that overrides these entry points without calling Flower's is not
seen (the caller reports that nothing was observed).
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

SECURE_WORKFLOWS = ("SecAggPlusWorkflow", "SecAggWorkflow")
APIS = {"message": "Strategy.start (Message API)",
        "workflow": "DefaultWorkflow with a LegacyContext (legacy strategy)",
        "server": "Server.fit (legacy server_fn / ServerAppComponents)"}


@dataclass
class ObservedStrategy:
    """One strategy as the app started it: ``api`` (a key of ``APIS``), the strategy it built, its rounds,
    ``secure`` (run under secure aggregation: the server sees only the sum) and the workflow's name, if any."""

    api: str
    strategy: object
    rounds: int
    secure: bool = False
    workflow: str | None = None
    started_round_one: bool = False


_lock = threading.Lock()


@contextlib.contextmanager
def observing_strategies(on_start):
    """Within the block, every strategy started is handed to ``on_start(ObservedStrategy)``, which returns the
    strategy to run in its place. Yields the list of observed starts, in order."""
    from flwr.server import Server
    from flwr.server.workflow import DefaultWorkflow
    from flwr.serverapp.strategy import Strategy

    observed: list[ObservedStrategy] = []
    originals = (Strategy.start, DefaultWorkflow.__call__, Server.fit)

    def take(entry: ObservedStrategy):
        with _lock:
            observed.append(entry)
        return on_start(entry)

    def start(self, grid, initial_arrays, num_rounds=3, *args, **kwargs):
        self = take(ObservedStrategy("message", self, num_rounds))
        return originals[0](self, grid, initial_arrays, num_rounds, *args, **kwargs)

    def workflow(self, grid, context):
        name = type(self.fit_workflow).__name__
        built = context.strategy
        context.strategy = take(ObservedStrategy("workflow", built, int(context.config.num_rounds),
                                                 secure=name in SECURE_WORKFLOWS, workflow=name))
        try:
            return originals[1](self, grid, context)
        finally:
            context.strategy = built

    def fit(self, num_rounds, timeout):
        built = self.strategy
        self.strategy = take(ObservedStrategy("server", built, int(num_rounds)))
        try:
            return originals[2](self, num_rounds, timeout)
        finally:
            self.strategy = built

    Strategy.start, DefaultWorkflow.__call__, Server.fit = start, workflow, fit
    try:
        yield observed
    finally:
        Strategy.start, DefaultWorkflow.__call__, Server.fit = originals
