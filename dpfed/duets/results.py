"""Run records of DUETS / DP-DUETS and of the DisKernelUCB baseline."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from accounting.mechanisms import Composition, SubsampledGaussian
from dpfed.transcript import Transcript


@dataclass(frozen=True)
class RewardOverride:
    """Force rewards of agent ``agent`` to ``value`` (after the observation, before clipping): in epoch
    ``epoch`` (1-based; None: every epoch) at query ``index`` of the epoch (None: every query). The
    canary hook of the probes: one reward (reward level) or a whole agent's rewards (agent level)."""

    agent: int
    value: float
    epoch: int | None = None
    index: int | None = None

    def apply(self, epoch: int, rewards: np.ndarray) -> None:
        if self.epoch is not None and self.epoch != epoch:
            return
        if self.index is None:
            rewards[self.agent, :] = self.value
        elif self.index < rewards.shape[1]:
            rewards[self.agent, self.index] = self.value


@dataclass
class EpochLog:
    """One epoch: its length, first step, whether it communicated, and (if it did) the public state."""

    epoch: int
    length: int
    start: int
    completed: bool
    active_before: int
    sigma_max: float | None = None
    inclusion_probability: float | None = None
    inducing: np.ndarray | None = None  # candidate indices of S_j
    threshold: float | None = None  # total elimination margin (incl. the DP widening)
    widening: float = 0.0
    active_after: int | None = None
    active_set: np.ndarray | None = field(default=None, repr=False)  # X_{j+1}, candidate indices
    mechanism: SubsampledGaussian | None = None
    model: object = field(default=None, repr=False)  # SparseModel (public: points and S only)

    def to_dict(self) -> dict:
        return {
            "epoch": self.epoch,
            "length": self.length,
            "start": self.start,
            "completed": self.completed,
            "active_before": self.active_before,
            "active_after": self.active_after,
            "sigma_max": self.sigma_max,
            "inclusion_probability": self.inclusion_probability,
            "inducing_size": None if self.inducing is None else int(self.inducing.size),
            "threshold": self.threshold,
            "widening": self.widening,
            "clip": None if self.mechanism is None else self.mechanism.clip,
        }


@dataclass
class DuetsRun:
    """The outcome of one run. ``instant_regret`` (N, T): f* - f(x_t^(n)); ``regret`` the cumulative
    regret summed over agents (eq. 1) after each step; ``communication`` the cumulative cost of eq. 2
    (uplink averaged over agents plus downlink) after each step, in reals."""

    algorithm: str
    objective: str
    instant_regret: np.ndarray
    points: np.ndarray  # (N, T) candidate indices
    uplink: np.ndarray  # (T,) reals uploaded per agent (average) at each step
    downlink: np.ndarray  # (T,) reals broadcast at each step
    epochs: list[EpochLog] = field(default_factory=list)
    transcript: Transcript = field(default_factory=Transcript)
    parameters: dict = field(default_factory=dict)
    config: object = None  # the DuetsConfig of a (DP-)DUETS run; None for the baseline

    @property
    def num_agents(self) -> int:
        return int(self.instant_regret.shape[0])

    @property
    def regret(self) -> np.ndarray:
        return np.cumsum(self.instant_regret.sum(axis=0))

    @property
    def communication(self) -> np.ndarray:
        return np.cumsum(self.uplink + self.downlink)

    @property
    def communication_rounds(self) -> int:
        return sum(e.completed for e in self.epochs)

    @property
    def mechanisms(self) -> list[SubsampledGaussian]:
        return [e.mechanism for e in self.epochs if e.mechanism is not None]

    def composition(self) -> Composition:
        """What this run released, through what (see ``dpfed.duets.private``); ValueError if not private
        (the plain algorithm sends its statistics unnoised) or if no epoch completed."""
        from dpfed.duets.private import run_composition

        if self.config is None or not self.config.private:
            raise ValueError(f"{self.algorithm} is not a private algorithm: nothing to account")
        composition = run_composition(self.config, self.mechanisms)
        if composition is None:
            raise ValueError("no epoch completed: nothing was released")
        return composition

    def summary(self) -> dict:
        return {
            "algorithm": self.algorithm,
            "objective": self.objective,
            "agents": self.num_agents,
            "horizon": int(self.instant_regret.shape[1]),
            "final_regret": float(self.regret[-1]),
            "communication": float(self.communication[-1]),
            "communication_rounds": self.communication_rounds,
            "epochs": [e.to_dict() for e in self.epochs],
            "parameters": self.parameters,
        }
