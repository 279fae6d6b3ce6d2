"""A Flower ``Grid`` that runs a ClientApp in this process, for fast tests of the transcript checks.

Flower's own runtime (``run_simulation``) starts Ray and takes 20-70 s per run on 2 cores; the checks read
only what the strategy sees, so these tests drive the very strategies (Flower's DP wrappers, FedAvg's
sampler, the apps' subclasses) through this grid instead: each message goes, as a serialised copy, to the
ClientApp (mods included) with a ``Context`` whose ``node_config`` holds ``partition-id`` and
``num-partitions`` as Flower's simulation gives them; node ids are random 63-bit integers as Flower's are.
The README's ``dpaudit flower`` and ``flower-app`` audit commands run on Flower's simulation engine
(``tests/test_readme_flower_commands.py``).
"""

from __future__ import annotations

import random

from flwr.app import Context, Message, RecordDict
from flwr.serverapp import Grid
from flwr.supercore.task_identity import TaskIdentity

SERVER_NODE = 1  # flwr's SUPERLINK_NODE_ID


class InProcessGrid(Grid):
    """``nodes`` SuperNodes running ``client_app`` (node i has partition-id i); ``run_config`` goes to each."""

    def __init__(self, client_app, nodes: int, run_config: dict | None = None, seed: int = 0):
        ids = random.Random(seed ^ 0x5EED).sample(range(1, 2 ** 63), nodes)
        self._app, self._ids = client_app, ids
        self._contexts = {node: Context(run_id=1, node_id=node,
                                        node_config={"partition-id": i, "num-partitions": nodes},
                                        state=RecordDict(), run_config=dict(run_config or {}))
                          for i, node in enumerate(ids)}
        TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, SERVER_NODE  # as flwr's runtime sets

    def set_run(self, run_id: int) -> None:
        pass

    @property
    def run(self):
        """The run (the legacy ``start_grid`` reads its id)."""
        from flwr.supercore.run import Run

        return Run.create_empty(run_id=1)

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
        return Message(content=content, dst_node_id=dst_node_id, message_type=message_type, group_id=group_id)

    def get_node_ids(self):
        return list(self._ids)

    def push_messages(self, messages):
        raise NotImplementedError("use send_and_receive")

    def pull_messages(self, message_ids):
        raise NotImplementedError("use send_and_receive")

    def send_and_receive(self, messages, *, timeout=None):
        replies = []
        for message in messages:
            node = message.metadata.dst_node_id
            copy = Message(content=_copied(message.content), dst_node_id=node,
                           message_type=message.metadata.message_type, group_id=message.metadata.group_id)
            TaskIdentity.node_id = node
            try:
                replies.append(self._app(copy, self._contexts[node]))
            finally:
                TaskIdentity.node_id = SERVER_NODE
        return replies


class ConnectingGrid(InProcessGrid):
    """An ``InProcessGrid`` whose nodes connect one by one, as Flower's simulation engine registers them while the
    ServerApp already runs: ``first`` nodes are connected at the first ``get_node_ids`` call and one more at each
    later call (all of them, in the end)."""

    def __init__(self, client_app, nodes: int, run_config: dict | None = None, seed: int = 0, first: int = 1):
        super().__init__(client_app, nodes, run_config, seed)
        self._connected = first

    def get_node_ids(self):
        seen = self._ids[:self._connected]
        self._connected = min(len(self._ids), self._connected + 1)
        return list(seen)


def _copied(content: RecordDict) -> RecordDict:
    """A deep copy of a message's content through Flower's own serialisation (what crosses the network)."""
    from flwr.common.serde import recorddict_from_proto, recorddict_to_proto

    return recorddict_from_proto(recorddict_to_proto(content))


def run_in_process(cfg: dict) -> dict:
    """Run a planted app (``tests/flower/planted_apps.py``) for ``cfg["rounds"]`` rounds on this grid, its strategy
    wrapped in our recorder; returns ``{"transcript", "strategy", "config", "configured_m", "partitions"}``
    (``partitions``: node id -> partition id)."""
    import torch

    from dpfed.flower.read import config_from_strategy
    from dpfed.flower.recorder import recording_strategy
    from tests.flower import planted_apps as app

    torch.set_num_threads(1)  # tiny models: threads only contend on a shared machine
    app.seed_everything(cfg)
    strategy = recording_strategy(app.make_strategy(cfg))
    config, configured_m = config_from_strategy(strategy, nodes=cfg["nodes"], rounds=cfg["rounds"], weighting="equal")
    grid = InProcessGrid(app.make_client_app(cfg), cfg["nodes"], seed=cfg["seed"])
    strategy.start(grid=grid, initial_arrays=app.initial_arrays(cfg), num_rounds=cfg["rounds"])
    return {"transcript": strategy.transcript, "strategy": strategy, "config": config, "configured_m": configured_m,
            "partitions": {node: i for i, node in enumerate(grid.get_node_ids())}}


def in_process_simulation(*, num_supernodes, client_app, server_app, server_app_context, node_seed: int = 0,
                          connecting: int | None = None, **_):
    """Stands in for flwr 1.42's ``_run_simulation`` (what ``dpfed.flower.run.run_app`` calls, so ``dpaudit flower``
    and the ``flower-app`` probe run unchanged): the ServerApp's main runs here on an ``InProcessGrid`` of
    ``num_supernodes`` nodes (canaries included: the audit's ClientApp carries the canary mod), each node's context
    holding the fused run config as Flower's simulation gives it. Node ids come from ``node_seed`` (Flower's
    simulation draws new ones every run). Torch runs single-threaded, as in ``run_in_process``. ``connecting``: the
    nodes connected when the ServerApp starts, one more at each look (``ConnectingGrid``; None: all of them)."""
    import torch

    torch.set_num_threads(1)  # tiny models: threads only contend on a shared machine
    config = dict(server_app_context.run_config)
    grid = (InProcessGrid(client_app, num_supernodes, run_config=config, seed=node_seed) if connecting is None
            else ConnectingGrid(client_app, num_supernodes, run_config=config, seed=node_seed, first=connecting))
    server_app(grid, server_app_context)


def flower_runtime_in_process(monkeypatch, connecting: int | None = None) -> None:
    """Make ``dpfed.flower.run.run_app`` run apps on the in-process grid for the rest of a test (pytest's
    ``monkeypatch``): it imports ``_run_simulation`` from flwr's module at each call. ``connecting``: see
    ``in_process_simulation``."""
    import functools
    import importlib

    # (``import flwr.simulation.run_simulation as m`` would give the function that flwr.simulation exports)
    simulation = importlib.import_module("flwr.simulation.run_simulation")
    monkeypatch.setattr(simulation, "_run_simulation", functools.partial(in_process_simulation, connecting=connecting))
