"""Run a Flower app project as ``flwr run APP_DIR`` runs it in simulation, with canary SuperNodes and a recorder.

``inspect_app`` reads the strategy the ServerApp starts without running the federation: it calls the ServerApp's
main with a grid that nothing may use and stops it when it starts its strategy (``dpfed.flower.host``), so that
a project that starts no Flower DP wrapper is refused before Flower starts. ``run_app`` then runs the project on
Flower's simulation engine the way ``flwr-simulation`` does (``_run_simulation`` with the project's ServerApp and
ClientApp, its directory and the fused run config; flwr 1.42's private entry, as ``flwr run`` uses it), with
``canaries`` extra SuperNodes answered by ``dpfed.flower.canary_mod`` and the started strategy wrapped in the
recorder (``dpfed.flower.recorder``) and the canary host.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from accounting.errors import ConfigurationError
from dpfed.flower.app_project import AppProject, load_apps
from dpfed.transcript import Transcript


@dataclass
class StartedStrategy:
    """What the ServerApp started: the strategy and its number of rounds."""

    strategy: object
    rounds: int


class _Stop(Exception):
    pass


class _NoGrid:
    """A grid for ``inspect_app``: the ServerApp may not use it before it starts its strategy."""

    def __getattr__(self, name):
        raise ConfigurationError("app", f"the ServerApp's main uses the grid ({name}) before it starts its "
                                        "strategy; the audit cannot read its strategy without running it")


def _context(run_config: dict, node_id: int = 0):
    from flwr.app import Context, RecordDict

    return Context(run_id=0, node_id=node_id, node_config={}, state=RecordDict(), run_config=dict(run_config))


def _dp_wrapped(strategy, rounds) -> None:
    try:
        wrapper_of_strategy(strategy)
    except ConfigurationError:
        raise ConfigurationError("app", f"the ServerApp starts a {type(strategy).__name__}, which neither is nor wraps "
                                        "one of Flower's DP wrappers (DifferentialPrivacy...Clipping); nothing to "
                                        "audit") from None
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise ConfigurationError("app", f"the ServerApp starts its strategy for {rounds!r} rounds")


def wrapper_of_strategy(strategy):
    from dpfed.flower.read import wrapper_of

    return wrapper_of(strategy)


def inspect_app(project: AppProject, run_config: dict) -> StartedStrategy:
    """The strategy the project's ServerApp starts under ``run_config`` (nothing is run past its start)."""
    from dpfed.flower.host import started_strategy

    server_app, _ = load_apps(project)
    seen = {}

    def stop(strategy, initial_arrays, rounds):
        seen["started"] = StartedStrategy(strategy, rounds)
        raise _Stop

    with started_strategy(stop):
        try:
            server_app(_NoGrid(), _context(run_config))
        except _Stop:
            pass
        except ConfigurationError:
            raise
        except Exception as exc:  # noqa: BLE001 - the project's own error, in one line
            raise ConfigurationError("app", f"the ServerApp's main failed before starting its strategy: "
                                            f"{type(exc).__name__}: {' '.join(str(exc).split())}") from None
    if "started" not in seen:
        raise ConfigurationError("app", "the ServerApp's main returned without starting a strategy "
                                        "(Strategy.start); nothing to audit")
    started = seen["started"]
    _dp_wrapped(started.strategy, started.rounds)
    return started


@dataclass(frozen=True)
class RunSettings:
    """One audited run: ``nodes`` real SuperNodes, ``canaries`` more, the seed of the canaries' directions and
    signs, and ``insert`` (False: a null run, the canaries send independent directions)."""

    nodes: int
    canaries: int = 0
    seed: int = 0
    insert: bool = True


def run_app(project: AppProject, run_config: dict, settings: RunSettings) -> dict:
    """Run the project once; returns ``{"transcript", "strategy", "rounds", "initial", "round_deltas",
    "round_numbers", "canary_nodes"}`` (``round_deltas``: each recorded round's released model minus its starting
    model, flat; ``canary_nodes``: node id -> canary index)."""
    from flwr.simulation.run_simulation import _run_simulation

    from dpfed.flower.canary_mod import CanaryMod, with_canaries
    from dpfed.flower.host import canary_host, started_strategy
    from dpfed.flower.recorder import recording_strategy

    server_app, client_app = load_apps(project)
    transcript, result = Transcript(), {}

    def take(strategy, initial_arrays, rounds):
        _dp_wrapped(strategy, rounds)
        recorder = recording_strategy(strategy, transcript)
        host = canary_host(recorder)
        result.update(strategy=strategy, recorder=recorder, host=host, rounds=rounds,
                      initial=initial_arrays.to_numpy_ndarrays())
        return host

    mod = CanaryMod(settings.nodes, settings.canaries, settings.seed, settings.insert)
    run = _run_with(run_config)
    # Ray starts its workers (the ClientApp actors) at nice 15; on a machine shared with other work they then
    # starve behind it (measured: minutes per round on a loaded 2-core machine). Normal priority unless set.
    os.environ.setdefault("RAY_worker_niceness", "0")
    with started_strategy(take) as state:
        _run_simulation(num_supernodes=settings.nodes + settings.canaries, exit_event=_exit_event(),
                        client_app=with_canaries(client_app, mod), server_app=server_app,
                        backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                        "init_args": {"num_cpus": 2, "include_dashboard": False}},
                        server_app_context=_context(run_config), app_dir=project.directory, run=run, is_app=True)
    if not state["taken"] or "host" not in result:
        raise ConfigurationError("app", "the ServerApp did not start a strategy through Strategy.start")
    recorder = result["recorder"]
    numbers = sorted(recorder.round_deltas)
    return {"transcript": transcript, "strategy": result["strategy"], "rounds": result["rounds"],
            "initial": result["initial"], "round_deltas": [recorder.round_deltas[r] for r in numbers],
            "round_numbers": numbers, "canary_nodes": dict(result["host"].canary_nodes)}


def _run_with(run_config: dict):
    """The ``Run`` that ``_run_simulation`` makes when given none (its Python-API path), with the run config's
    overrides (each node's context fuses them with the project's defaults, as ``flwr run`` does)."""
    from flwr.server.superlink.linkstate.utils import generate_rand_int_from_bytes
    from flwr.simulation.run_simulation import (
        NOOP_FEDERATION_ID,
        RUN_ID_NUM_BYTES,
        SUPERLINK_NODE_ID,
        TASK_ID_NUM_BYTES,
        TaskIdentity,
    )
    from flwr.supercore.run import Run

    run = Run.create_empty(run_id=generate_rand_int_from_bytes(RUN_ID_NUM_BYTES))
    run.primary_task_id = generate_rand_int_from_bytes(TASK_ID_NUM_BYTES)
    run.federation_id = NOOP_FEDERATION_ID
    run.override_config = dict(run_config)
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, run.run_id, SUPERLINK_NODE_ID
    return run


def _exit_event():
    from flwr.supercore.telemetry import EventType

    return EventType.PYTHON_API_RUN_SIMULATION_LEAVE
