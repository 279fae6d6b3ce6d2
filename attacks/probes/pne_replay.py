"""Replay of a DP-Fed-PNE run along its observed trajectory: the observer of ``PneEndToEndProbe``'s
``replay`` score.

Unit of privacy (``dpfed.pne.private``, ``shared/notes/seed_fedpne.md`` Appendix D): event level, i.e.
one reward of one client at one time step, replaced by any value. The canary is that reward (client
``client``, pull 0 of node ``node`` in phase ``phase``); it is 0 in world 0 and ``canary_value`` in
world 1, and after clipping it enters exactly one Gaussian release.

Threat model (what the observer knows; the guarantee holds conditionally on all of it, since none of
it depends on the canary's own noise): every public message of the run (the server's schedule
broadcasts, i.e. nodes and pulls of every phase, and every client's uploaded local means: the
honest-but-curious server's view), the objective, the Fed-PNE constants, and the data seeds of the
run, i.e. the partition seed, every client's local objective and every observation noise draw, hence
every raw reward of every client except the canary. It does NOT know the privacy stream: the Gaussian
noise of the canary (and, equally, of every other reward) stays unknown.

Reconstruction, written from the algorithm's description (not by calling the algorithm's code): the
observer rebuilds the raw rewards of every uploaded phase along the *observed* schedule (the same
environment draws in the same order), subtracts from the canary client's upload of the canary node
everything but the canary (the known, clipped other pulls of that node), and is left with the
canary's clipped value plus the mechanism's noise. It also replays the server (average the uploads
over clients, the elimination rule, expansion of the survivors, the expansion rule and ``tau``) from
the observed uploads and compares the result with the next observed schedule. For a correct
implementation the schedule is a function of the uploads, so the replay never deviates; a deviation
means a decision used something besides the uploads. At the phase after the canary's, the observer
also computes the schedules the same rule would give from the *un-noised* (clipped) means in either
world; if the observed schedule matches exactly one of them, the deviation points to that world.

What is taken as known data rather than reconstructed: the environment (``Partition`` cells from the
shared partition seed, the local objectives and ``ObservationNoise`` from the data streams, built for
many runs at once by ``attacks.probes.pne_data``), i.e. the clients' data; none of the algorithm's
decisions, averaging, clipping or schedule code is called. The adversary could also be given the
other rewards' privacy noise (independent of the canary's); the observer does not use it, which only
makes it weaker.

Exactness: the replayed quantities follow the description with the same formulas and order of
operations (``tau`` keeps the implementation's 1e-12 guard against ceil(integer + ulp)), so for the
reference implementation the replay is bit-exact. Measured (``benchmarks/pne_replay.py``): 0 deviating
schedules in 2903 (T = 20) and 6499 (T = 2000) replayed phases of 1000 correct runs each, and the
canary's residual equal to its upload exactly (pulls = 1). Validity never depends on exactness: the
score is a function of the public view and of data independent of the canary's noise, so any error
only costs power (and a spurious deviation would not get a jump unless it matched one world's
un-noised schedule and not the other's).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from attacks.probes.pne_data import RunData, data_streams, runs_data

DEVIATION_SCORE = 1e9  # added (signed) to the score when a decision points to one world


@dataclass(frozen=True)
class Replayed:
    """What the observer reconstructed from one run."""

    residual: float | None  # canary's clipped value + its noise (sum over the canary node's pulls)
    count: int  # rewards of the canary client in the canary node's upload
    direction: int  # +1 / -1: the next schedule follows world 1 / world 0's un-noised means; else 0
    deviations: int  # phases whose observed schedule differs from the replayed one


@dataclass(frozen=True)
class PneRules:
    """Fed-PNE's server rules as the seed describes them (section 2.4 of the notes)."""

    horizon: int
    clients: int
    k: int = 2
    nu1: float = 1.0
    rho: float = 0.5
    c: float = 0.1
    c1: float = 1.0
    conf_delta: float | None = None

    @functools.cached_property
    def log_term(self) -> float:
        conf = self.conf_delta if self.conf_delta is not None else 1.0 / self.clients
        return math.log(self.c1 * self.horizon / conf)

    @functools.cached_property
    def _taus(self) -> dict:
        return {}

    def tau(self, depth: int) -> int:
        """ceil(c^2 log(c1 T/delta) / nu1^2 rho^(-2h)), with a 1e-12 guard against ceil(integer + ulp)."""
        if depth not in self._taus:
            self._taus[depth] = max(
                1, math.ceil(self.c**2 * self.log_term / self.nu1**2 * self.rho ** (-2 * depth) - 1e-12)
            )
        return self._taus[depth]

    def expand(self, partition, nodes):
        """Expand while |K| tau(h) <= M or tau(h) <= 1; returns (nodes, depth, pulls per client)."""
        depth = int(nodes.depth[0])
        while len(nodes) * self.tau(depth) <= self.clients or self.tau(depth) <= 1:
            nodes, depth = partition.children(nodes), depth + 1
        return nodes, depth, math.ceil(self.tau(depth) / self.clients)

    def eliminated(self, mu: np.ndarray, pulls: int, depth: int) -> np.ndarray:
        """Nodes with mu + b + nu1 rho^h < max mu - b, b = c sqrt(log(c1 T/delta) / (M pulls))."""
        radius = self.c * math.sqrt(self.log_term / (self.clients * pulls))
        return mu + radius + self.nu1 * self.rho**depth < mu[np.argmax(mu)] - radius

    def next_schedule(self, partition, nodes, mu, pulls: int, depth: int):
        keep = ~self.eliminated(mu, pulls, depth)
        if not isinstance(partition, CachedChildren):
            return self.expand(partition, partition.children(nodes.take(keep)))
        return partition.memo(
            ("next", self, nodes, keep), lambda: self.expand(partition, partition.children(nodes.take(keep)))
        )


class CachedChildren:
    """A partition whose ``children`` are memoised by (seed where the cells depend on it, keys): the
    observer's own cache (the replay builds one partition per run, the cells repeat across runs)."""

    def __init__(self, partition, cache: dict):
        self.partition, self.cache = partition, cache
        seedless = partition.split == "midpoint" and (partition.dimension == "cyclic" or partition.dim == 1)
        self.tag = None if seedless else partition.seed

    def __getattr__(self, name):
        return getattr(self.partition, name)

    def children(self, nodes):
        return self._cached(
            (self.tag, nodes.depth.tobytes(), nodes.index.tobytes()), lambda: self.partition.children(nodes)
        )

    def memo(self, key: tuple, make):
        """``make()`` memoised by ``key`` = (label, rules, nodes, mask): the same nodes (by their keys) of
        the same cells give the same result."""
        label, rules, nodes, mask = key
        return self._cached(
            (label, rules, self.tag, nodes.depth.tobytes(), nodes.index.tobytes(), mask.tobytes()), make
        )

    def _cached(self, key, make):
        if key not in self.cache:
            if len(self.cache) > 100_000:
                self.cache.clear()
            self.cache[key] = make()
        return self.cache[key]


def nodes_of(partition, keys, predicted):
    """The partition's nodes with ``keys`` (``predicted`` reused when its keys are the same)."""
    if predicted is not None and predicted.keys() == [tuple(key) for key in keys]:
        return predicted
    from dpfed.pne.partition import Nodes

    parts = [partition.node(int(d), int(i)) for d, i in keys]
    return Nodes(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("depth", "index", "lo", "hi")))


@dataclass(frozen=True)
class PneObserver:
    """Replays runs of one probe setting (see module docstring); ``phase``/``node``/``client`` locate the
    canary (pull 0), ``canary_value`` is its world-1 value (world 0: 0)."""

    objective: object
    rules: PneRules
    heterogeneity: float
    heterogeneity_kind: str
    noise: object
    client: int
    phase: int
    node: tuple
    canary_value: float
    cache: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def replay(self, run, data, through: int | None = None) -> Replayed:
        """Replay ``run`` up to phase ``through`` (default: the phase after the canary's, the last that can
        change the score; ``through=0``: every phase). ``data`` is the run's ``RunData`` or its
        ``data_streams`` (partition seed, objective and observation streams): never the privacy stream."""
        if isinstance(data, tuple):
            data = self.runs_data([data])[0]
        return self._replay(run, data, self._partition(data.partition_seed), through)

    def _replay(self, run, data, partition, through) -> Replayed:
        last = self._last(through)
        uploads = {phase: (keys, means) for phase, keys, means in run.uploads}
        state, used, worlds = self.rules.expand(partition, partition.root()), 0, None
        out = {"residual": None, "count": 0, "direction": 0, "deviations": 0}
        for log in run.phases:
            if log.phase > last:
                break
            keys = [tuple(key) for key in log.nodes]
            if (keys, int(log.pulls)) != (state[0].keys(), state[2]):
                out["deviations"] += 1
                out["direction"] = _direction(log, worlds) if log.phase == self.phase + 1 else out["direction"]
            if log.phase not in uploads:
                break
            nodes = nodes_of(partition, keys, state[0])
            depth, pulls = int(nodes.depth[0]), int(log.pulls)
            raw = data.rewards(nodes, pulls, self.noise)
            done = min(len(nodes) * pulls, self.rules.horizon - used)
            pulled = (np.arange(len(nodes) * pulls) < done).reshape(len(nodes), pulls)
            means = uploads[log.phase][1]
            if log.phase == self.phase:
                out.update(self._canary(log, raw, pulled, uploads[log.phase]))
                # the un-noised schedules matter only if the next one deviates: computed then (never, for a
                # correct implementation)
                worlds = functools.partial(self._worlds, partition, nodes, raw, log, depth) if log.completed else None
            if not log.completed:
                break
            state = self.rules.next_schedule(partition, nodes, _mean(means, 0), pulls, depth)
            used += len(nodes) * pulls
        return Replayed(**out)

    def replay_all(self, runs, streams, through: int | None = None) -> list[Replayed]:
        """``[replay(run, s, through) for run, s in zip(runs, streams)]`` (``streams``: the runs'
        ``data_streams``), with the data built together: the local objectives in one batch, and the first
        phase's rewards, for every run whose first schedule is the data-independent predicted one and is
        uploaded, in one draw."""
        partitions = [self._partition(s[0]) for s in streams]
        rows, firsts, pulls = [], [], None
        for k, (run, partition) in enumerate(zip(runs, partitions, strict=True)):
            log = run.phases[0] if run.phases else None
            if log is not None and log.phase <= self._last(through) and _uploaded(run, log.phase):
                nodes, _, pulls = self.rules.expand(partition, partition.root())  # the same pulls in every run
                if ([tuple(key) for key in log.nodes], int(log.pulls)) == (nodes.keys(), pulls):
                    rows.append(k)
                    firsts.append(nodes)
        data = self.runs_data(streams, (rows, firsts, pulls) if rows else None)
        return [self._replay(*args, through) for args in zip(runs, data, partitions, strict=True)]

    def runs_data(self, streams, ahead=None) -> list[RunData]:
        """``pne_data.runs_data`` in this observer's environment."""
        args = (self.objective, self.rules.clients, self.heterogeneity, self.heterogeneity_kind)
        return runs_data(streams, *args, ahead=ahead, noise=self.noise)

    def _last(self, through) -> float:
        return self.phase + 1 if through is None else (through or math.inf)

    def _partition(self, seed: int):
        from dpfed.pne.partition import Partition

        return CachedChildren(Partition(self.objective.domain, k=self.rules.k, seed=seed), self.cache)

    def _canary(self, log, raw, pulled, upload) -> dict:
        """The canary client's upload of the canary node times its count, minus its other clipped rewards."""
        keys = [tuple(key) for key in upload[0]]
        j = [tuple(key) for key in log.nodes].index(self.node)
        if self.node not in keys or not pulled[j, 0]:
            return {"residual": None, "count": 0}
        count = int(pulled[j].sum())
        others = np.clip(raw[self.client, j, 1:count], 0.0, 1.0).sum()
        return {"residual": float(upload[1][self.client, keys.index(self.node)]) * count - others, "count": count}

    def _worlds(self, partition, nodes, raw, log, depth):
        """The next schedule (keys, pulls) the rule gives from each world's un-noised clipped means."""
        j = [tuple(key) for key in log.nodes].index(self.node)
        schedules = []
        for value in (0.0, self.canary_value):
            table = raw.copy()
            table[self.client, j, 0] = value
            mu = _mean(_mean(np.clip(table, 0.0, 1.0), -1), 0)
            nxt, _, pulls = self.rules.next_schedule(partition, nodes, mu, int(log.pulls), depth)
            schedules.append((nxt.keys(), pulls))
        return schedules


def _mean(values: np.ndarray, axis: int) -> np.ndarray:
    """``values.mean(axis)`` as ndarray.mean computes it (the sum, then one division), without its overhead."""
    return np.add.reduce(values, axis=axis) / values.shape[axis]


def _uploaded(run, phase: int) -> bool:
    return any(upload[0] == phase for upload in run.uploads)


def _direction(log, worlds) -> int:
    """+1 if the observed schedule is world 1's un-noised one and not world 0's, -1 the reverse, else 0
    (``worlds``: None, or a function giving the two worlds' un-noised schedules)."""
    if worlds is None:
        return 0
    schedules = worlds()
    seen = ([tuple(key) for key in log.nodes], int(log.pulls))
    in0, in1 = seen == schedules[0], seen == schedules[1]
    return int(in1) - int(in0)


def decisive_node(observer: PneObserver, seeds: int = 32) -> tuple:
    """Of the first phase's nodes, the one whose un-noised decision the canary changes in the most of
    ``seeds`` dry data sets (fixed seeds 0..seeds-1, not the trials'): where an adversary who may place
    its canary would put it. The first phase's schedule depends on no data, so it is the same in every run."""
    from dpfed.pne.partition import Partition
    from dpfed.pne.results import PhaseLog

    rules, flips = observer.rules, None
    for entropy in range(seeds):
        (data,) = observer.runs_data([data_streams(entropy)])
        partition = Partition(observer.objective.domain, k=rules.k, seed=data.partition_seed)
        nodes, depth, pulls = rules.expand(partition, partition.root())
        raw = data.rewards(nodes, pulls, observer.noise)
        log = PhaseLog(1, depth, nodes.keys(), rules.tau(depth), pulls, 0, True)
        if flips is None:
            flips = np.zeros(len(nodes))
        for j, key in enumerate(nodes.keys()):
            worlds = dataclasses.replace(observer, node=key)._worlds(partition, nodes, raw, log, depth)
            flips[j] += worlds[0] != worlds[1]
    return nodes.keys()[int(np.argmax(flips))]
