"""Fed-PNE for a batch of independent runs: phases in lockstep, runs grouped by their phase's shape.

Runs diverge (elimination depends on the noisy means), so a phase is executed for every unfinished run
at once and the runs whose phase has the same shape (nodes, pulls, pulls done, completed) are one
vectorised computation: rewards, the override, privatisation, local means and the elimination rule.
Each run keeps its own streams (``RunStreams``, derived for the whole batch at once); the grouped
draws go through ``TrialStreams`` and the local objectives of all runs are one ``LocalObjectivesBatch``,
so run k of a batch is exactly the run ``run_fed_pne`` makes with seed k. ``run_fed_pne`` is a batch of one.
See ``dpfed.pne.algorithm`` for the protocol.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from dpfed.pne.local_batch import LocalObjectivesBatch
from dpfed.pne.objectives import Objective, ObservationNoise
from dpfed.pne.override import apply_override
from dpfed.pne.partition import Partition
from dpfed.pne.results import BanditRun, PhaseLog
from dpfed.pne.seeding import RunStreams
from dpfed.transcript import BROADCAST, SERVER, Transcript, agent_name
from dpfed.trials import TrialStreams


@dataclass(frozen=True)
class FedPNEOptions:
    """Everything of a Fed-PNE run besides its constants (``PNEConfig``) and its seed.

    ``privatizer(rewards (..., M, L, t), rng) -> rewards`` is applied to the raw rewards of every phase
    (its ``final`` method, if any, to a phase cut by the horizon); ``reward_override`` forces chosen raw
    rewards (canary probes); ``record_transcript=False`` keeps the uploads only as arrays
    (``BanditRun.uploads``), which is what large batches of probe runs need.
    """

    heterogeneity: float = 0.1
    heterogeneity_kind: str = "bumps"
    noise: ObservationNoise = field(default_factory=ObservationNoise)
    partition: Partition | None = None
    privatizer: object = None
    reward_override: object = None
    algorithm: str = "fed-pne"
    record_transcript: bool = True


class _SharedChildren:
    """``Partition.children`` (and the root) memoised across the runs of a batch, for partitions whose
    cells do not depend on the seed (midpoint splits along a cyclic dimension, or in one dimension);
    for such shared node sets, ``facts`` memoises what a phase reads off them (keys, centres, regret)
    and ``survivors`` the children of the nodes an elimination keeps."""

    def __init__(self, objective: Objective):
        self.objective = objective
        self.cache: dict = {}
        self.facts_of: dict = {}  # id(shared nodes) -> [nodes, facts or None]; holds nodes, so ids stay unique

    @staticmethod
    def _seedless(partition: Partition) -> bool:
        return partition.split == "midpoint" and (partition.dimension == "cyclic" or partition.dim == 1)

    def _shared(self, key, make):
        if key not in self.cache:
            self.cache[key] = nodes = make()
            self.facts_of[id(nodes)] = [nodes, None]
        return self.cache[key]

    def root(self, partition: Partition):
        if not self._seedless(partition):
            return partition.root()
        return self._shared((partition.k, partition.domain.tobytes()), partition.root)

    def __call__(self, partition: Partition, nodes):
        if not self._seedless(partition):
            return partition.children(nodes)
        key = (partition.k, partition.domain.tobytes(), nodes.depth.tobytes(), nodes.index.tobytes())
        return self._shared(key, lambda: partition.children(nodes))

    def survivors(self, partition: Partition, nodes, keep: np.ndarray):
        """The children of the kept nodes (memoised by the kept set when ``nodes`` is shared)."""
        entry = self.facts_of.get(id(nodes))
        if entry is None or entry[0] is not nodes:
            return self(partition, nodes.take(keep))
        key = ("survivors", partition.k, partition.domain.tobytes(), id(nodes), keep.tobytes())
        if key not in self.cache:
            self.cache[key] = self(partition, nodes.take(keep))
        return self.cache[key]

    def facts(self, nodes):
        """(keys, centres, regret at the centres) of ``nodes``; the keys list is the caller's own copy."""
        entry = self.facts_of.get(id(nodes))
        if entry is None or entry[0] is not nodes:
            centres = nodes.centre
            return nodes.keys(), centres, self.objective.regret(centres)
        if entry[1] is None:
            entry[1] = (nodes.keys(), nodes.centre, self.objective.regret(nodes.centre))
        keys, centres, regret = entry[1]
        return list(keys), centres, regret


class _RunState:
    """One run between phases."""

    def __init__(self, objective: Objective, config, options: FedPNEOptions, streams: RunStreams, row: int, children):
        self.streams, self.row = streams, row  # row: this run's row of the batch's local objectives
        self.children = children
        self.partition = options.partition or Partition(objective.domain, k=config.k, seed=self.streams.partition_seed)
        self.active = children.root(self.partition)
        self.used = self.phase = self.rounds = self.uplink = self.downlink = self.forced = 0
        self.recommendation = objective.domain.mean(axis=1)
        self.instant = np.empty(config.horizon)
        self.points = np.empty((config.horizon, objective.domain.shape[0]))
        self.phases: list[PhaseLog] = []
        self.uploads: list[tuple[int, list, np.ndarray]] = []  # (phase, node keys, means (M, L))
        self.schedules: list[tuple[int, list, int]] = []  # (phase, node keys, pulls)
        self.finished = False

    def start_phase(self, objective: Objective, config) -> None:
        """Expand the active set, fix this phase's pulls and record what the clients will play."""
        self.phase += 1
        depth = int(self.active.depth[0])
        while config.needs_expansion(len(self.active), depth):
            self.active = self.children(self.partition, self.active)
            depth += 1
        self.depth, self.tau = depth, config.tau(depth)
        self.pulls = math.ceil(self.tau / config.num_clients)
        self.keys, self.centres, regret = self.children.facts(self.active)
        length = len(self.keys) * self.pulls
        self.schedules.append((self.phase, self.keys, self.pulls))
        self.downlink += 2 * len(self.keys) + 1
        self.done = min(length, config.horizon - self.used)
        self.completed = self.done == length
        played = slice(self.used, self.used + self.done)
        node = np.arange(self.done) // self.pulls  # the node of each pull played (np.repeat, cut at done)
        self.instant[played] = regret[node]
        self.points[played] = self.centres[node]

    def log(self, **extra) -> PhaseLog:
        return PhaseLog(
            phase=self.phase,
            depth=self.depth,
            nodes=self.keys,
            tau=self.tau,
            pulls=self.pulls,
            start=self.used,
            completed=self.completed,
            **extra,
        )


def run_fed_pne_batch(objective: Objective, config, seeds, options: FedPNEOptions) -> list[BanditRun]:
    """K = ``len(seeds)`` independent Fed-PNE runs (see module docstring); one ``BanditRun`` per seed."""
    children = _SharedChildren(objective)
    streams = RunStreams.batch(seeds)
    runs = [_RunState(objective, config, options, s, row, children) for row, s in enumerate(streams)]
    local = LocalObjectivesBatch(
        objective, config.num_clients, options.heterogeneity, options.heterogeneity_kind, [s.objective for s in streams]
    )
    while True:
        active = [run for run in runs if not run.finished]
        if not active:
            break
        for run in active:
            run.start_phase(objective, config)
        for group in _group_by_shape(active, config):
            _play_group(group, local, config, options)
    return [_result(run, objective, config, options) for run in runs]


def _group_by_shape(runs, config) -> list[list[_RunState]]:
    """Runs whose phase uploads, grouped by (nodes, pulls, pulls done, completed); others finish here."""
    groups = defaultdict(list)
    for run in runs:
        if run.completed or config.final_upload:
            groups[(len(run.keys), run.pulls, run.done, run.completed)].append(run)
        else:
            run.phases.append(run.log())
            run.finished = True
    return list(groups.values())


def _play_group(group, local: LocalObjectivesBatch, config, options: FedPNEOptions) -> None:
    """One phase of runs of the same shape: rewards, privatisation, uploads, then the server's step."""
    first = group[0]
    m, num_nodes, pulls = config.num_clients, len(first.keys), first.pulls
    pulled = (np.arange(num_nodes * pulls) < first.done).reshape(num_nodes, pulls)
    values = local.values([run.row for run in group], np.stack([run.centres for run in group]))  # (G, M, L)
    observation = TrialStreams([run.streams.observation for run in group])
    rewards = values[..., None] + options.noise.sample(observation, (len(group), m, num_nodes, pulls))
    for run, table in zip(group, rewards, strict=True):
        run.forced += apply_override(table, run.keys, options.reward_override, pulled)
    if options.privatizer is not None:
        privatise = options.privatizer if first.completed else getattr(options.privatizer, "final", options.privatizer)
        rewards = privatise(rewards, TrialStreams([run.streams.privacy for run in group]))
    counts = pulled.sum(axis=1)
    sent = counts > 0
    means = (rewards * pulled).sum(axis=-1)[..., sent] / counts[sent]  # (G, M, L_sent)
    every = bool(sent.all())
    for run, run_means in zip(group, means, strict=True):
        keys_sent = list(run.keys) if every else [key for key, s in zip(run.keys, sent, strict=True) if s]
        run.uploads.append((run.phase, keys_sent, run_means))
        run.rounds += 1
        run.uplink += m * int(sent.sum())
    if not first.completed:
        for run in group:
            run.phases.append(run.log())
            run.finished = True
        return
    _eliminate(group, means.mean(axis=1), config)


def _eliminate(group, mu, config) -> None:
    """The server's step for completed phases: keep the best node, drop the dominated ones, expand."""
    first = group[0]
    radius = config.radius(config.num_clients * first.pulls)
    best = np.argmax(mu, axis=1)
    best_mu = np.take_along_axis(mu, best[:, None], axis=1)
    eliminated = mu + radius + config.nu1 * config.rho**first.depth < best_mu - radius
    for run, b, elim in zip(group, best, eliminated, strict=True):
        run.recommendation = run.centres[b].copy()  # the centres may be shared by runs
        run.phases.append(
            run.log(
                radius=radius, best=run.keys[b], eliminated=[key for key, e in zip(run.keys, elim, strict=True) if e]
            )
        )
        run.used += len(run.keys) * run.pulls
        run.active = run.children.survivors(run.partition, run.active, ~elim)


def _transcript(run, num_clients: int) -> Transcript:
    transcript = Transcript()
    uploads = {phase: (keys, means) for phase, keys, means in run.uploads}
    for phase, keys, pulls in run.schedules:
        transcript.add(phase, SERVER, BROADCAST, "schedule", {"nodes": keys, "pulls": pulls})
        if phase in uploads:
            keys_sent, means = uploads[phase]
            for m in range(num_clients):
                transcript.add(phase, agent_name(m), SERVER, "local_means", {"nodes": keys_sent, "means": means[m]})
    return transcript


def _result(run, objective, config, options: FedPNEOptions) -> BanditRun:
    params = {
        "k": config.k,
        "nu1": config.nu1,
        "rho": config.rho,
        "c": config.c,
        "c1": config.c1,
        "conf_delta": config.conf_delta,
        "expansion": config.expansion,
        "final_upload": config.final_upload,
        "heterogeneity": options.heterogeneity,
        "heterogeneity_kind": options.heterogeneity_kind,
        "noise": {"kind": options.noise.kind, "width": options.noise.width},
        "partition": run.partition.describe(),
        "override_applied": run.forced,
    }
    transcript = _transcript(run, config.num_clients) if options.record_transcript else Transcript()
    return BanditRun(
        options.algorithm,
        objective.name,
        config.num_clients,
        config.horizon,
        run.instant,
        run.points,
        np.asarray(run.recommendation),
        communication_rounds=run.rounds,
        uplink_floats=run.uplink,
        downlink_values=run.downlink,
        phases=run.phases,
        transcript=transcript,
        parameters=params,
        uploads=run.uploads,
    )
