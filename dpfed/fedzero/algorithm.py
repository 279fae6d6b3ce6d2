"""FedZero (Algorithm 1 of seed 003; notes B.2): federated zero-order dual averaging.

Each round the server broadcasts ``x_t``; every worker j evaluates its loss at ``x_t +- h zeta_j``
(two-point) or at ``x_t + h zeta_j`` (one-point), with zeta_j from a seed it shares with the server,
and sends ONE real: the difference ``y - y'`` (or the value ``y``). The server forms
``g_t = (1/m) sum_j d s_j w_j`` with ``s_j = (y - y')/(2h)`` (or ``y/h``) and ``w_j = sign(zeta_j)``
(or ``zeta_j`` for l2 randomisation), sets ``z_{t+1} = z_t - g_t`` and ``x_{t+1} = argmax eta <z, x> - V(x)``.
Vectorised across workers and across ``runs`` independent runs (a leading axis).

Transcript (per round t): ``server -> *`` "iterate" (x_t, shape (runs, d)) and, per worker,
``agent<j> -> server`` "difference"/"value" (shape (runs,)); the private uplinks of
``dpfed.fedzero.private`` replace the latter by their releases. Regret: ``f(x_t) - min_Theta f``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from accounting.errors import ConfigurationError, require_number
from accounting.mechanisms import Composition
from dpfed.fedzero.config import FedZeroConfig, theorem_bound
from dpfed.fedzero.geometry import sample_directions
from dpfed.fedzero.objectives import ContextLosses
from dpfed.streams import spawn_generators
from dpfed.transcript import BROADCAST, SERVER, Transcript, agent_name

STREAMS = ("contexts", "directions", "selection", "privacy")
CHUNK = 256


@dataclass(frozen=True)
class ScalarCanary:
    """Force worker ``worker``'s scalar ``s`` to ``value`` every round, before any clipping or noise.

    With ``record=None`` the worker's scalar is replaced (worker-level probes; value 0 is a zero-loss
    worker, equivalent to its absence). With ``record=k`` the worker's records all get scalar 0 (zero-loss
    fillers) except record k, which gets ``value`` (record-level probes). A linear loss aligned with the
    public direction realises such a scalar (``L <sign(zeta), x>`` gives s = L for l1 losses)."""

    worker: int
    value: float
    record: int | None = None

    def validate(self, config: FedZeroConfig) -> None:
        require_number("canary worker", self.worker, low=0, high=config.workers - 1, integer=True)
        require_number("canary value", self.value)
        if self.record is not None:
            require_number("canary record", self.record, low=0, high=config.records - 1, integer=True)

    def apply(self, scalars: np.ndarray) -> None:
        if self.record is None:
            scalars[:, self.worker, :] = self.value
        else:
            scalars[:, self.worker, :] = 0.0
            scalars[:, self.worker, self.record] = self.value


class ExactUplink:
    """Non-private: each worker sends its raw difference (or value) of one uniformly drawn record."""

    mechanism = None
    all_records = False

    def aggregate(self, t, raw, scalars, weights, rng, transcript, name) -> np.ndarray:
        if transcript is not None:
            for j in range(raw.shape[1]):
                transcript.add(t, agent_name(j), SERVER, name, raw[:, j, 0].copy())
        return weights.shape[-1] * (scalars[..., :1] * weights).mean(axis=1)

    def composition(self, rounds: int) -> Composition | None:
        return None


@dataclass
class FedZeroRun:
    """``instant_regret`` (n, runs): ``f(x_t) - min f``; ``regret`` its cumulative sum (runs, n)."""

    algorithm: str
    config: FedZeroConfig
    step: float
    perturbation: float
    instant_regret: np.ndarray
    transcript: Transcript
    uplink: object = field(repr=False)
    final_iterate: np.ndarray | None = None
    parameters: dict = field(default_factory=dict)

    @property
    def mechanism(self):
        return self.uplink.mechanism

    @property
    def regret(self) -> np.ndarray:
        return np.cumsum(self.instant_regret, axis=0).T

    @property
    def final_regret(self) -> np.ndarray:
        return self.regret[:, -1]

    @property
    def uplink_reals(self) -> int:
        """Reals sent by all workers in the run (1 per worker per round with the shared seed)."""
        return self.config.rounds * self.config.workers

    @property
    def downlink_reals(self) -> int:
        return self.config.rounds * self.config.dim

    def composition(self) -> Composition:
        composition = self.uplink.composition(self.config.rounds)
        if composition is None:
            raise ValueError(f"{self.algorithm} is not a private algorithm: nothing to account")
        return composition

    def summary(self) -> dict:
        return {
            "algorithm": self.algorithm,
            "geometry": self.config.geometry,
            "dim": self.config.dim,
            "workers": self.config.workers,
            "rounds": self.config.rounds,
            "step": self.step,
            "perturbation": self.perturbation,
            "final_regret": self.final_regret.tolist(),
            "theorem_4_1_bracket": theorem_bound(self.config),
            "uplink_reals": self.uplink_reals,
            "downlink_reals": self.downlink_reals,
            "parameters": self.parameters,
        }


def _uploads(config, losses, x, zeta, h, records, canary) -> tuple[np.ndarray, np.ndarray]:
    """The workers' raw numbers and scalars of one round, the canary's forced in."""
    raw, scalars = _worker_scalars(config, losses, x, zeta, h, records)
    if canary is not None:
        canary.apply(scalars)
        raw = scalars * (2 * h if config.estimator == "two-point" else h)
    return raw, scalars


def _worker_scalars(config, losses, x, zeta, h, records):
    """(raw, s) of shape (runs, m, k): the sent raw numbers and the scalars of the estimate."""
    plus = x[:, None, None, :] + h * zeta[:, :, None, :]
    y = losses.values(plus, records)
    if config.estimator == "one-point":
        return y, y / h
    raw = y - losses.values(x[:, None, None, :] - h * zeta[:, :, None, :], records)
    return raw, raw / (2 * h)


def regret_of(losses: ContextLosses, iterates: np.ndarray, max_elements: int = 4_000_000) -> np.ndarray:
    """``f(x_t) - min f`` for iterates (rounds, runs, d), evaluated in blocks that bound the memory."""
    per_round = iterates.shape[1] * losses.contexts[..., 0].size * iterates.shape[2]
    block = max(1, max_elements // per_round)
    out = np.empty(iterates.shape[:2])
    for start in range(0, len(iterates), block):
        out[start : start + block] = losses.global_loss(iterates[start : start + block]) - losses.minimum
    return out


def run_fedzero(
    config: FedZeroConfig,
    seed=None,
    *,
    uplink=None,
    runs: int = 1,
    directions=None,
    privacy_rng=None,
    shared_directions: bool = False,
    canary: ScalarCanary | None = None,
    record_transcript: bool = True,
    track_regret: bool = True,
    algorithm: str = "fedzero",
    on_rounds=None,
) -> FedZeroRun:
    """Run FedZero ``runs`` times in one vectorised loop (see the module docstring).

    ``seed`` derives the streams of the contexts, the shared directions, the workers' record draws and
    the privacy noise; ``directions``/``privacy_rng`` replace the shared-direction and noise streams
    (probes replay the directions in both worlds). ``uplink`` (default ``ExactUplink()``) decides what
    crosses the network. ``on_rounds(n)``, if given, is called after each block of ``n`` rounds (for a
    progress display).
    """
    streams = spawn_generators(seed, STREAMS)
    streams["directions"] = streams["directions"] if directions is None else np.random.default_rng(directions)
    streams["privacy"] = streams["privacy"] if privacy_rng is None else np.random.default_rng(privacy_rng)
    uplink = uplink or ExactUplink()
    runs = int(require_number("runs", runs, low=1, integer=True))
    if canary is not None:
        canary.validate(config)
    losses = ContextLosses.generate(config.geometry, config.workers, config.records, config.dim, streams["contexts"])
    eta, h = config.parameters(losses.lipschitz)
    transcript = Transcript() if record_transcript else None
    rounds = _Rounds(config, losses, uplink, streams, canary, transcript, eta, h, 1 if shared_directions else runs)
    dual, x = np.zeros((runs, config.dim)), config.space.start(runs)
    instant = np.zeros((config.rounds, runs))
    for start in range(0, config.rounds, CHUNK):
        size = min(CHUNK, config.rounds - start)
        dual, x, iterates = rounds.play(start, size, dual, x)
        if track_regret:
            instant[start : start + size] = regret_of(losses, iterates)
        if on_rounds is not None:
            on_rounds(size)
    if not np.all(np.isfinite(x)):
        raise ConfigurationError("step", "the iterates diverged (non-finite)")
    parameters = {"L": losses.lipschitz, "q": config.q, "R": rounds.space.R, "d1": config.d1, "minimum": losses.minimum}
    return FedZeroRun(algorithm, config, eta, h, instant, transcript or Transcript(), uplink, x, parameters)


@dataclass
class _Rounds:
    """What the rounds of one ``run_fedzero`` call share: problem, losses, uplink, streams, canary,
    transcript (None: not recorded), step ``eta``, perturbation ``h`` and the runs of distinct directions."""

    config: FedZeroConfig
    losses: ContextLosses
    uplink: object
    streams: dict
    canary: ScalarCanary | None
    transcript: Transcript | None
    eta: float
    h: float
    direction_runs: int

    def __post_init__(self):
        self.space = self.config.space
        self.message = "difference" if self.config.estimator == "two-point" else "value"

    def play(self, start: int, size: int, dual: np.ndarray, x: np.ndarray):
        """Rounds ``start + 1 .. start + size`` from dual state ``dual`` and iterate ``x`` (runs, d); returns
        the new dual state and iterate and the iterates played, shape (size, runs, d)."""
        config, m, runs = self.config, self.config.workers, x.shape[0]
        zetas, weights = sample_directions(
            self.streams["directions"], (size, self.direction_runs, m), config.dim, config.randomisation
        )
        selection = self.streams["selection"]
        picks = None if self.uplink.all_records else selection.integers(config.records, size=(size, runs, m, 1))
        worker_index = np.arange(m)[None, :, None]
        iterates = np.empty((size, runs, config.dim))
        for i in range(size):
            t = start + i + 1
            if self.transcript is not None:
                self.transcript.add(t, SERVER, BROADCAST, "iterate", x.copy())
            iterates[i] = x
            records = self.losses.contexts[None] if picks is None else self.losses.contexts[worker_index, picks[i]]
            raw, scalars = _uploads(config, self.losses, x, zetas[i], self.h, records, self.canary)
            privacy = self.streams["privacy"]
            dual = dual - self.uplink.aggregate(t, raw, scalars, weights[i], privacy, self.transcript, self.message)
            x = self.space.iterate(dual, self.eta)
        return dual, x, iterates
