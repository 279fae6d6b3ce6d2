"""DUETS / DP-DUETS end-to-end probe on the algorithm's own release path (see ``attacks.probes.duets``).

Every batch of trials is ONE call of ``run_duets`` per world with ``mechanism_trials`` = the batch size:
the algorithm draws each epoch's DP release for every trial itself (its own ``communicate`` ->
``server_release`` -> ``release_sum``), and the scores are computed from the ``v_bar`` broadcasts in that
run's transcript. Shared public randomness (coins, observation noise, server draws) is replayed from
``replay_seed``; a run raises if the trials' trajectories would differ (an elimination that depends on the
noise). A dry run per world (noise stream 0) gives the public state: inducing sets and server models.

Canary. Agent level: every other agent's rewards are 0 (known to the adversary; the worst case of
add/remove), the canary agent's are 0 (world 0: statistic zero, as if absent) or ``canary_scale * c_y``
(world 1; ``canary_scale > 1`` puts it beyond the reward clip). Reward level: one reward of the first
epoch at an inducing point is ``-+canary_scale * c_y``. The score's reference sums ``m0, m1`` are computed
HERE from the specification (features of the public points, rewards clipped to ``[-c_y, c_y]``, the
canary's statistic clipped to the public ``C_j``), not read from the algorithm, so a clip the algorithm
skips moves the released sums away from the reference and the score sees it.
DP-DUETS is our design (notes A.9); ``private = False`` audits the seed's non-private DUETS.
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
class _Epoch:
    """The public state of one released epoch and the score's reference for it."""

    epoch: int
    inducing: np.ndarray
    gram: np.ndarray  # A = lam I + Z^T Z (public), so that A v_bar is the released sum
    mechanism: object  # None for non-private DUETS
    noise_std: float
    shift: np.ndarray  # m1 - m0: the canary's effect on the specified noise-free sum
    middle: np.ndarray  # (m0 + m1) / 2


class _AgentCanary:
    """Reward override of the agent-level worlds: all rewards 0 but the canary agent's, set to ``value``."""

    def __init__(self, agent: int, value: float):
        self.agent, self.value = agent, value

    def apply(self, epoch: int, rewards: np.ndarray) -> None:
        rewards[:] = 0.0
        rewards[self.agent, :] = self.value


def _clip_norm(vector: np.ndarray, bound: float) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector if norm <= bound else vector * (bound / norm)


@dataclass
class DuetsEndToEndProbe(Probe):
    """The real (DP-)DUETS run with a canary agent or reward, its releases batched over the trials."""

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
    canary_scale: float = 1.0

    name = "dp-duets-end-to-end"
    threat_model = "broadcast view"
    description = (
        "DP-DUETS (ours) end to end, releases drawn by the algorithm itself (batched over trials): canary "
        "agent's rewards 0 vs canary_scale * c_y (agent level) or one reward -+canary_scale * c_y (reward "
        "level); projection statistic of the broadcast sums over the epochs the canary touches"
    )
    batch_size = 20_000
    memory_per_trial = 4096

    def __post_init__(self):
        self.canary_agent = int(
            require_number("canary_agent", self.canary_agent, low=0, high=int(self.agents) - 1, integer=True)
        )
        self.delta = require_number("delta", self.delta, low=0, high=1, low_open=True, high_open=True)
        self.canary_scale = require_number("canary_scale", self.canary_scale, low=1.0, high=1e6)
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
        self._stop = 1 if self.unit == "reward" else None
        self._worlds = self._overrides()
        self._epochs = self._replay()
        self.default_delta = self.delta

    def _overrides(self):
        from dpfed.duets import RewardOverride, run_duets

        value, a = self.canary_scale * self._config.reward_clip, self.canary_agent
        if self.unit == "agent":
            return _AgentCanary(a, 0.0), _AgentCanary(a, value)
        dry = run_duets(self._config, self.replay_seed, mechanism_rng=0, stop_after=1)
        first = dry.epochs[0]
        if not first.completed:
            raise ConfigurationError("horizon", "the first epoch does not complete: nothing is released")
        hits = np.flatnonzero(np.isin(dry.points[a, : first.length], first.inducing))
        if hits.size == 0:
            raise ConfigurationError("replay_seed", "the canary agent has no inducing point in epoch 1")
        index = int(hits[0])
        return RewardOverride(a, -value, epoch=1, index=index), RewardOverride(a, value, epoch=1, index=index)

    def _run(self, world: int, **kwargs):
        from dpfed.duets import run_duets

        return run_duets(
            self._config, self.replay_seed, reward_override=self._worlds[world], stop_after=self._stop, **kwargs
        )

    def _replay(self) -> list[_Epoch]:
        from dpfed.duets.private import released_noise_std

        runs = [self._run(w, mechanism_rng=0) for w in (0, 1)]
        completed = [e for e in runs[0].epochs if e.completed]
        if not completed:
            raise ConfigurationError("horizon", "no epoch completes: nothing is released")
        epochs = []
        for log in completed:
            if not np.array_equal(log.inducing, runs[1].epochs[log.epoch - 1].inducing):
                raise ConfigurationError("replay_seed", "the worlds' public states differ: replay is not exact")
            m0, m1 = self._reference(runs, log)
            s = released_noise_std(self._config, log.mechanism) if self.private else 1.0
            gram = log.model.chol @ log.model.chol.T
            epochs.append(_Epoch(log.epoch, log.inducing, gram, log.mechanism, s, m1 - m0, (m0 + m1) / 2))
        return epochs

    def _features(self, log, points) -> np.ndarray:
        from dpfed.duets.algorithm import objective_of
        from dpfed.duets.surrogate import NystromFeatures

        kernel = objective_of(self._config).kernel
        return NystromFeatures.build(kernel, log.inducing, self._config.jitter)(kernel, points)

    def _reference(self, runs, log) -> tuple[np.ndarray, np.ndarray]:
        """The specified noise-free sums of the two worlds in epoch ``log`` (module docstring)."""
        from dpfed.duets.private import agent_clip_bound

        c, a = self._config.reward_clip, self.canary_agent
        points = runs[0].points[a, log.start : log.start + log.length]
        z = self._features(log, points)  # (T_j, r)
        if self.unit == "agent":
            canary = z.T @ np.full(log.length, min(self.canary_scale * c, c))
            if self.private:
                canary = _clip_norm(canary, agent_clip_bound(self._config, log.length))
            return np.zeros_like(canary), canary
        index = self._worlds[1].index
        others = [_uploads(r, log.epoch).sum(axis=0) for r in runs]  # the canary's reward is symmetric
        middle = (others[0] + others[1]) / 2
        half = c * z[index] if self.private else self.canary_scale * c * z[index]
        return middle - half, middle + half

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

    def broadcasts(self, world, trials, rng) -> list[np.ndarray]:
        """The ``v_bar`` broadcasts of ``trials`` runs of ``world``, as the algorithm drew them: one
        (trials, r) array per released epoch."""
        trials = int(trials)
        run = self._run(check_world(world), mechanism_rng=rng, mechanism_trials=trials)
        out = []
        for e in self._epochs:
            if not np.array_equal(run.epochs[e.epoch - 1].inducing, e.inducing):
                raise RuntimeError("a batched run left the replayed public state: replay is not exact")
            (v_bar,) = [m.payload for m in run.transcript.filter(name="v_bar", round=e.epoch)]
            out.append(np.broadcast_to(v_bar, (trials, e.gram.shape[0])))
        return out

    def scores(self, world, trials, rng):
        total = np.zeros(int(trials))
        for e, v_bar in zip(self._epochs, self.broadcasts(world, trials, rng), strict=True):
            total += (v_bar @ e.gram - e.middle) @ e.shift / e.noise_std**2  # A v_bar: the released sum
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
