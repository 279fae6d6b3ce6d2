"""DUETS / DP-DUETS end-to-end probe with shared-randomness replay (see ``attacks.probes.duets``).

The probe runs the real algorithm once per world with the same seed and the canary forced through its
``RewardOverride`` hook; the trials then re-draw only the mechanism noise of the epochs the canary
touches, through ``release_sum`` and ``SparseModel.solve`` with a leading trial axis. DP-DUETS is our
design (notes A.9); ``private = False`` audits the seed's non-private DUETS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number
from accounting.exact import gaussian_epsilon
from accounting.mechanisms import Composition
from attacks.probes.base import Probe, check_world
from attacks.probes.duets import _config


@dataclass(frozen=True)
class _EpochReplay:
    """The replayed public state of one epoch: both worlds' uploads, the server model, the mechanism."""

    uploads: tuple[np.ndarray, np.ndarray]  # (N, r) per world
    model: object
    mechanism: object  # None for non-private DUETS
    noise_std: float
    shift: np.ndarray  # m1 - m0: the canary's effect on the noise-free clipped sum
    middle: np.ndarray  # (m0 + m1) / 2


@dataclass
class DuetsEndToEndProbe(Probe):
    """The real (DP-)DUETS run with a canary agent or reward; shared-randomness replay of all but noise."""

    objective: str = "cosine"
    agents: int = 3
    horizon: int = 20
    candidates: int = 200
    unit: str = "agent"
    noise_multiplier: float = 2.0
    reward_clip: float = 1.0
    agent_clip: str = "sqrt"
    clip_scale: float = 1.0
    elimination: str = "off"
    canary_agent: int = 0
    replay_seed: int = 0
    private: bool = True
    delta: float = 1e-5

    name = "dp-duets-end-to-end"
    threat_model = "broadcast view"
    description = (
        "DP-DUETS (ours) end to end with shared-randomness replay: canary agent's rewards 0 vs "
        "+c_y (agent level) or one reward -c_y vs +c_y (reward level); projection statistic "
        "of the released sums over the epochs the canary touches"
    )
    batch_size = 50_000

    def __post_init__(self):
        self.canary_agent = int(
            require_number("canary_agent", self.canary_agent, low=0, high=int(self.agents) - 1, integer=True)
        )
        self.delta = require_number("delta", self.delta, low=0, high=1, low_open=True, high_open=True)
        if not isinstance(self.private, bool):
            raise ConfigurationError("private", f"expected true or false, got {self.private!r}")
        if self.unit == "agent" and self.elimination != "off":
            raise ConfigurationError(
                "elimination",
                "agent-level replay needs elimination = 'off' (otherwise "
                "the trajectory depends on the noise); use unit = 'reward'",
            )
        self._config = _config(
            algorithm="dp-duets" if self.private else "duets",
            objective=self.objective,
            num_agents=self.agents,
            horizon=self.horizon,
            candidates=self.candidates,
            unit=self.unit,
            noise_multiplier=self.noise_multiplier,
            reward_clip=self.reward_clip,
            agent_clip=self.agent_clip,
            clip_scale=self.clip_scale,
            elimination=self.elimination,
        )
        self._epochs = self._replay()
        self.default_delta = self.delta

    def _overrides(self):
        from dpfed.duets import RewardOverride, run_duets

        c, a = self._config.reward_clip, self.canary_agent
        if self.unit == "agent":
            return RewardOverride(a, 0.0), RewardOverride(a, c)
        dry = run_duets(self._config, self.replay_seed, mechanism_rng=0)
        first = dry.epochs[0]
        if not first.completed:
            raise ConfigurationError("horizon", "the first epoch does not complete: nothing is released")
        hits = np.flatnonzero(np.isin(dry.points[a, : first.length], first.inducing))
        if hits.size == 0:
            raise ConfigurationError("replay_seed", "the canary agent has no inducing point in epoch 1")
        index = int(hits[0])
        return RewardOverride(a, -c, epoch=1, index=index), RewardOverride(a, c, epoch=1, index=index)

    def _replay(self) -> list[_EpochReplay]:
        from dpfed.duets import run_duets
        from dpfed.duets.private import released_noise_std

        runs = [
            run_duets(self._config, self.replay_seed, mechanism_rng=0, reward_override=o) for o in self._overrides()
        ]
        completed = [e for e in runs[0].epochs if e.completed]
        if not completed:
            raise ConfigurationError("horizon", "no epoch completes: nothing is released")
        if self.unit == "reward":
            completed = completed[:1]
        replays = []
        for log in completed:
            other = runs[1].epochs[log.epoch - 1]
            if not np.array_equal(log.inducing, other.inducing):
                raise ConfigurationError("replay_seed", "the worlds' public states differ: replay is not exact")
            uploads = tuple(_uploads(r, log.epoch) for r in runs)
            sums = [self._clipped_sum(log.mechanism, u) for u in uploads]
            s = released_noise_std(self._config, log.mechanism) if self.private else 1.0
            replays.append(
                _EpochReplay(uploads, log.model, log.mechanism, s, sums[1] - sums[0], (sums[0] + sums[1]) / 2)
            )
        return replays

    def _clipped_sum(self, mechanism, uploads):
        if mechanism is None or self.unit == "reward":
            return uploads.sum(axis=0)
        return mechanism.clip_vectors(uploads).sum(axis=0)

    def mechanism(self):
        if not self.private:
            return None
        return Composition(tuple((e.mechanism, 1) for e in self._epochs))

    def true_epsilon(self, delta: float) -> float | None:
        """Tight epsilon of this canary: mu^2 = sum_j |m1_j - m0_j|^2 / s_j^2 (infinite if not private)."""
        if not self.private:
            return math.inf
        mu = float(np.sqrt(sum((e.shift @ e.shift) / e.noise_std**2 for e in self._epochs)))
        return gaussian_epsilon(mu, float(delta))

    def simulate_broadcasts(self, world: int, trials: int, rng) -> list[np.ndarray]:
        """The ``v_bar`` broadcasts of ``trials`` replayed runs of ``world``: one (trials, r) per epoch."""
        from dpfed.duets.private import release_sum

        world, out = check_world(world), []
        for e in self._epochs:
            uploads = np.broadcast_to(e.uploads[world], (int(trials),) + e.uploads[world].shape)
            if self.private:
                released = release_sum(self._config, e.mechanism, uploads, rng)
            else:
                released = uploads.sum(axis=-2)
            out.append(e.model.solve(released))
        return out

    def scores(self, world, trials, rng):
        total = np.zeros(int(trials))
        for e, v_bar in zip(self._epochs, self.simulate_broadcasts(world, trials, rng), strict=True):
            released = v_bar @ (e.model.chol @ e.model.chol.T)  # A v_bar (A is symmetric)
            total += (released - e.middle) @ e.shift / e.noise_std**2
        return total


def _uploads(run, epoch: int) -> np.ndarray:
    """(N, r): every agent's ``statistic`` message of ``epoch`` (the server's view of the uplink)."""
    return np.array([m.payload for m in run.transcript.filter(name="statistic", round=epoch)])


@dataclass
class PlainDuetsEndToEndProbe(DuetsEndToEndProbe):
    """The seed's non-private DUETS under the same replay: v_bar is sent unnoised, so it leaks exactly."""

    private: bool = False

    name = "duets-end-to-end"
    description = (
        "non-private DUETS (seed 001) end to end: the same canary and replay, v_bar broadcast unnoised; "
        "the audit must reach the trial ceiling"
    )
