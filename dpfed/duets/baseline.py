"""DisKernelUCB (Li, Song, Gu 2022), the baseline the DUETS seed compares with (our reading; the seed only
names it and sets D = 10), vectorised across agents on the same candidate set as DUETS.

Every agent runs GP-UCB (``argmax mu + beta sigma`` of the exact GP posterior with noise variance
lambda) on the last synchronised data plus its own data since then. After each step agent n evaluates the
event trigger ``(t - t_last) log det(I + K_n / lambda) / det(I + K_sync / lambda) > D``; if any agent
fires, every agent uploads its new raw samples ((d + 1) reals each) and the server broadcasts all of
them, so every agent holds the union. Communication follows the seed's eq. 2 as for DUETS: uplink
averaged over agents plus the broadcast counted once. ``threshold = inf`` gives N-KernelUCB (no
communication). The posterior over the candidates is updated by block Cholesky appends,
``W = L^{-1} K_{D,C}``, so a step costs O(m M) per agent instead of a refit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpfed.duets.algorithm import objective_of, observe, streams
from dpfed.duets.config import DuetsConfig
from dpfed.duets.results import DuetsRun


@dataclass
class PosteriorState:
    """Exact GP posterior over the candidates for B data sets of equal size m (leading batch axis)."""

    w: np.ndarray  # (B, capacity, M): rows of L^{-1} K_{D,C}
    b: np.ndarray  # (B, capacity): L^{-1} y
    mean: np.ndarray  # (B, M)
    var: np.ndarray  # (B, M)
    size: int = 0

    @classmethod
    def empty(cls, batch: int, capacity: int, kernel: np.ndarray) -> PosteriorState:
        m = kernel.shape[0]
        return cls(
            np.zeros((batch, capacity, m)),
            np.zeros((batch, capacity)),
            np.zeros((batch, m)),
            np.tile(np.diag(kernel), (batch, 1)),
        )

    def append(self, kernel: np.ndarray, points: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
        """Add k points (B, k) with values (B, k); returns log det(I + K_new|old / lam) per batch."""
        k, m = points.shape[1], self.size
        old = self.w[:, :m]
        l21 = np.take_along_axis(old, points[:, None, :], axis=2).transpose(0, 2, 1)  # (B, k, m)
        schur = kernel[points[:, :, None], points[:, None, :]] + lam * np.eye(k) - l21 @ l21.transpose(0, 2, 1)
        l22 = np.linalg.cholesky(schur)
        rows = np.linalg.solve(l22, kernel[points] - l21 @ old)  # (B, k, M)
        coef = np.linalg.solve(l22, (y - np.einsum("bkm,bm->bk", l21, self.b[:, :m]))[..., None])[..., 0]
        self.w[:, m : m + k], self.b[:, m : m + k] = rows, coef
        self.size += k
        self.var = np.maximum(self.var - (rows**2).sum(axis=1), 0.0)
        self.mean = self.mean + np.einsum("bkm,bk->bm", rows, coef)
        return 2.0 * np.log(np.diagonal(l22, axis1=1, axis2=2)).sum(axis=1) - k * math.log(lam)

    def copy_from(self, other: PosteriorState, index: int = 0) -> None:
        """Every batch entry becomes entry ``index`` of ``other``."""
        m = other.size
        self.w[:, :m], self.b[:, :m] = other.w[index, :m], other.b[index, :m]
        self.mean[:], self.var[:], self.size = other.mean[index], other.var[index], m


def run_dis_kernel_ucb(config: DuetsConfig | None = None, seed=None, threshold: float = 10.0) -> DuetsRun:
    """DisKernelUCB with trigger threshold D (``math.inf``: N-KernelUCB) and ``config.beta`` (a number)."""
    config = config or DuetsConfig()
    objective, n, horizon = objective_of(config), config.num_agents, config.horizon
    beta, lam, kernel = float(config.beta), config.lam, objective.kernel
    rng = streams(seed, n)
    agents = PosteriorState.empty(n, n * horizon, kernel)
    synced = PosteriorState.empty(1, n * horizon, kernel)
    points, rewards = np.zeros((n, horizon), dtype=int), np.zeros((n, horizon))
    uplink, downlink = np.zeros(horizon), np.zeros(horizon)
    last, gain, rounds = 0, np.zeros(n), 0
    for t in range(horizon):
        chosen = np.argmax(agents.mean + beta * np.sqrt(agents.var), axis=1)
        points[:, t] = chosen
        rewards[:, t] = observe(objective, chosen[:, None], config.noise_std, rng["observations"])[:, 0]
        gain += agents.append(kernel, chosen[:, None], rewards[:, t : t + 1], lam)
        if np.any((t + 1 - last) * gain > threshold) and t + 1 < horizon:
            new = slice(last, t + 1)
            synced.append(kernel, points[:, new].reshape(1, -1), rewards[:, new].reshape(1, -1), lam)
            agents.copy_from(synced)
            uplink[t] = (objective.dim + 1) * (t + 1 - last)
            downlink[t] = (objective.dim + 1) * n * (t + 1 - last)
            last, gain, rounds = t + 1, np.zeros(n), rounds + 1
    name = "n-kernelucb" if math.isinf(threshold) else "diskernelucb"
    return DuetsRun(
        name,
        config.objective,
        objective.optimum - objective.values[points],
        points,
        uplink,
        downlink,
        parameters={"beta": beta, "threshold": threshold, "synchronisations": rounds},
    )
