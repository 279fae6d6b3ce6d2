"""Run a Flower app project once, as ``flwr run APP_DIR`` runs it in simulation, and observe what it runs.

``run_app`` runs the project on Flower's simulation engine the way ``flwr-simulation`` does (``_run_simulation``
with the project's ServerApp and ClientApp, its directory and the fused run config; flwr 1.42's private entry, as
``flwr run`` uses it). Nothing is dry-run: the ServerApp's main may use the grid, wait for its nodes, or start
several strategies. The audit observes (``dpfed.flower.observe``) every strategy where it starts (the Message API's
``Strategy.start``, a legacy strategy in ``DefaultWorkflow`` with or without SecAgg+, the legacy ``Server.fit``)
and wraps each one that is or wraps a Flower DP wrapper in a recorder (``dpfed.flower.recorder`` or
``legacy_recorder``); with canaries, a Message-API one also in the canary host (a legacy one's recorder hosts the
canaries, which run the project's own ClientApp and mods, ``dpfed.flower.legacy_canary``). Every real client's call
runs inside ``dpfed.flower.client_observer`` (what opacus ran in it), and ``canaries`` extra SuperNodes are answered
by ``dpfed.flower.canary_mod``. The ServerApp runs once every SuperNode has connected (``dpfed.flower.nodes``: Flower's
simulation starts it before it registers them).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tempfile
from dataclasses import dataclass, field

from accounting.errors import ConfigurationError
from dpfed.flower.app_project import AppProject, load_apps
from dpfed.flower.observe import ObservedStrategy
from dpfed.transcript import Transcript


def _context(run_config: dict, node_id: int = 0):
    from flwr.app import Context, RecordDict

    return Context(run_id=0, node_id=node_id, node_config={}, state=RecordDict(), run_config=dict(run_config))


def dp_wrapper(strategy):
    """The Flower central-DP wrapper ``strategy`` is or wraps, or None."""
    from dpfed.flower.read import wrapper_of

    try:
        return wrapper_of(strategy)
    except ConfigurationError:
        return None


@dataclass(frozen=True)
class RunSettings:
    """One audited run: ``nodes`` real SuperNodes, ``canaries`` more, the seed of the canaries' directions and
    signs, ``insert`` (False: a null run, the canaries send independent directions) and ``client_canaries`` (gradient
    canaries through each real client's own private optimizer, ``dpfed.flower.client_observer``)."""

    nodes: int
    canaries: int = 0
    seed: int = 0
    insert: bool = True
    client_canaries: int = 0  # gradient canaries through each client's own private optimizer (opacus)


@dataclass
class StartedRun:
    """One strategy the app started and what the audit put around it: ``recorder`` (None: no central DP wrapper,
    run as built) and ``host`` (the canary host, Message API with a DP wrapper and canaries only)."""

    observed: ObservedStrategy
    recorder: object = None
    host: object = None
    summary: dict | None = None  # what its transcript check looked at (``attacks.flower_checks``), once checked
    sensitivity: dict | None = None  # what the replays of its inner strategy showed, once checked

    @property
    def transcript(self) -> Transcript | None:
        return None if self.recorder is None else self.recorder.transcript

    def round_numbers(self) -> list[int]:
        return [] if self.recorder is None else sorted(self.recorder.round_deltas)


@dataclass
class AppRun:
    """What one run of the app showed: each strategy started (in order), every real client's observed call
    (``dpfed.flower.client_observer`` records), the canary nodes (node id -> canary index) and the ClientApp's
    ``LocalDpMod`` objects."""

    starts: list = field(default_factory=list)
    clients: list = field(default_factory=list)
    canary_nodes: dict = field(default_factory=dict)
    local_dp_mods: list = field(default_factory=list)  # the ClientApp's LocalDpMod objects (read, not run by us)
    train_mods: dict | None = None  # the ClientApp's training mod chains (``dpfed.flower.mods``; None: unread)
    nodes: int = 0  # the real SuperNodes (the deployment's population)
    canaries: int = 0  # the canary SuperNodes the audit added

    def recorded(self) -> list[StartedRun]:
        return [s for s in self.starts if s.recorder is not None]


def _canary_refusal(entry: ObservedStrategy) -> str | None:
    if dp_wrapper(entry.strategy) is None:
        return (f"--canaries: the app's {type(entry.strategy).__name__} has no Flower central-DP wrapper to scale a "
                "canary's update by its clip (run without --canaries: the clients' own DP is observed)")
    return None


def _recorded(entry: ObservedStrategy, settings: RunSettings, result: AppRun):
    """The strategy to run in place of ``entry``'s: a DP one inside its recorder (and, Message API, the canary
    host); noted in ``result``. Canaries where none can be scaled are refused (Flower has started by then)."""
    from dpfed.flower.host import canary_host
    from dpfed.flower.legacy_recorder import legacy_recording_strategy
    from dpfed.flower.recorder import recording_strategy

    refusal = _canary_refusal(entry) if settings.canaries else None
    if refusal is not None:
        raise ConfigurationError("canaries", refusal)
    started = StartedRun(entry)
    result.starts.append(started)
    if dp_wrapper(entry.strategy) is None:
        return entry.strategy
    if entry.api == "message":
        started.recorder = recording_strategy(entry.strategy, Transcript())
        started.host = canary_host(started.recorder) if settings.canaries else None
        return started.host or started.recorder
    started.recorder = legacy_recording_strategy(entry.strategy, Transcript(), secure=entry.secure,
                                                 canaries=bool(settings.canaries))
    return started.recorder


def run_app(project: AppProject, run_config: dict, settings: RunSettings) -> AppRun:
    """Run the project once with ``settings`` and return what was observed (``AppRun``)."""
    from flwr.simulation.run_simulation import _run_simulation

    from dpfed.flower.canary_mod import CanaryMod, with_canaries
    from dpfed.flower.client_observer import ClientObserver, read_records
    from dpfed.flower.legacy_canary import is_legacy
    from dpfed.flower.mods import train_chains
    from dpfed.flower.nodes import with_all_nodes
    from dpfed.flower.observe import observing_strategies
    from dpfed.flower.quiet import flower_log_level, is_quiet

    quiet = is_quiet()  # ``--no-progress``: no INFO log from Flower, here or in the ClientApp processes
    server_app, client_app = load_apps(project)
    mods = [m for m in getattr(client_app, "_mods", []) or [] if type(m).__name__ == "LocalDpMod"]
    result = AppRun(local_dp_mods=mods, nodes=settings.nodes, canaries=settings.canaries,
                    train_mods=train_chains(client_app))
    server_app = with_all_nodes(server_app, settings.nodes + settings.canaries)
    take = functools.partial(_recorded, settings=settings, result=result)
    mod = CanaryMod(settings.nodes, settings.canaries, settings.seed, settings.insert)
    if settings.canaries and is_legacy(client_app):  # canaries run the project's own ClientApp and mods
        mod = dataclasses.replace(mod, legacy=True)
    run = _run_with(run_config)
    # Ray starts its workers (the ClientApp actors) at nice 15; on a machine shared with other work they then
    # starve behind it (measured: minutes per round on a loaded 2-core machine). Normal priority unless set.
    os.environ.setdefault("RAY_worker_niceness", "0")
    with tempfile.TemporaryDirectory(prefix="dpaudit-clients-") as directory, observing_strategies(take), \
            flower_log_level(quiet):
        app = with_canaries(client_app, mod, ClientObserver(directory, settings.client_canaries, settings.seed,
                                                            quiet=quiet))
        try:
            _run_simulation(num_supernodes=settings.nodes + settings.canaries, exit_event=_exit_event(),
                            client_app=app, server_app=server_app,
                            backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                            "init_args": {"num_cpus": 2, "include_dashboard": False}},
                            server_app_context=_context(run_config), app_dir=project.directory, run=run, is_app=True)
        except ConfigurationError as exc:
            raise ConfigurationError(exc.field, f"{str(exc).split(': ', 1)[-1]} (Flower had started the app)") \
                from None
        except Exception as exc:  # noqa: BLE001 - the app's own failure while Flower ran it, in one line
            cause = exc.__cause__ or exc
            raise ConfigurationError("app", f"the app failed while Flower ran it: {type(cause).__name__}: "
                                            f"{' '.join(str(cause).split())[:200]}") from None
        result.clients = read_records(directory)
    result.canary_nodes = {node: index for s in result.starts
                           for node, index in getattr(s.host or s.recorder, "canary_nodes", {}).items()}
    return result


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
