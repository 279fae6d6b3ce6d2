"""Synthetic convex losses for FedZero with known constants (the seed has no experiments; notes B.4).

Each worker holds ``records`` contexts; ``f_c`` is convex and L-Lipschitz w.r.t. l_q on all of R^d:

* ``l1``: ``f_c(x) = ||x - c||_1`` with c on the simplex (Dirichlet(1/2)): L = 1, q = 1;
* ``l2``: ``f_c(x) = ||x - c||_2`` with c in the Euclidean ball of radius 1/2: L = 1, q = 2.

The global loss is the mean over all records (mu uniform over the pooled contexts); its minimiser over
Theta is computed exactly (a linear programme on the simplex) or to 1e-10 (Weiszfeld's geometric
median, which lies in the convex hull of the contexts and hence in Theta).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import optimize

from accounting.mechanisms import as_generator


@dataclass(frozen=True)
class ContextLosses:
    """Per-worker contexts ``contexts[j, k]`` (m, records, d) of the norm losses of ``kind``."""

    kind: str
    contexts: np.ndarray

    @classmethod
    def generate(cls, kind: str, workers: int, records: int, dim: int, rng=None) -> ContextLosses:
        rng = as_generator(rng)
        if kind == "l1":
            contexts = rng.dirichlet(np.full(dim, 0.5), size=(workers, records))
        else:
            g = rng.standard_normal((workers, records, dim))
            radii = 0.5 * rng.random((workers, records, 1)) ** (1.0 / dim)
            contexts = radii * g / np.linalg.norm(g, axis=-1, keepdims=True)
        return cls(kind, contexts)

    @property
    def q(self) -> float:
        return 1.0 if self.kind == "l1" else 2.0

    @property
    def lipschitz(self) -> float:
        return 1.0

    def values(self, points: np.ndarray, contexts: np.ndarray) -> np.ndarray:
        """``f_c(point)`` elementwise over the leading axes of ``points`` and ``contexts`` (..., d)."""
        diff = points - contexts
        if self.kind == "l1":
            return np.abs(diff).sum(axis=-1)
        return np.sqrt(np.einsum("...i,...i->...", diff, diff))

    def global_loss(self, points: np.ndarray) -> np.ndarray:
        """f(x) = mean over all records of f_c(x), for points (..., d)."""
        pool = self.contexts.reshape(-1, self.contexts.shape[-1])
        return self.values(points[..., None, :], pool).mean(axis=-1)

    @cached_property
    def minimiser(self) -> np.ndarray:
        pool = self.contexts.reshape(-1, self.contexts.shape[-1])
        return _simplex_l1_median(pool) if self.kind == "l1" else _geometric_median(pool)

    @cached_property
    def minimum(self) -> float:
        return float(self.global_loss(self.minimiser))


def _simplex_l1_median(points: np.ndarray) -> np.ndarray:
    """argmin over the simplex of mean_k ||x - c_k||_1, as a linear programme."""
    k, d = points.shape
    cost = np.concatenate([np.zeros(d), np.full(k * d, 1.0 / k)])
    eye = np.eye(d)
    rows_x = np.tile(eye, (k, 1))
    slack = -np.eye(k * d)
    upper = np.vstack([np.hstack([rows_x, slack]), np.hstack([-rows_x, slack])])
    rhs = np.concatenate([points.ravel(), -points.ravel()])
    equality = np.concatenate([np.ones(d), np.zeros(k * d)])[None, :]
    result = optimize.linprog(cost, A_ub=upper, b_ub=rhs, A_eq=equality, b_eq=[1.0], bounds=(0, None), method="highs")
    return result.x[:d]


def _geometric_median(points: np.ndarray, tol: float = 1e-12, iterations: int = 10_000) -> np.ndarray:
    """Weiszfeld's iteration for argmin mean_k ||x - c_k||_2."""
    x = points.mean(axis=0)
    for _ in range(iterations):
        dist = np.maximum(np.linalg.norm(points - x, axis=1), 1e-15)
        new = (points / dist[:, None]).sum(axis=0) / (1.0 / dist).sum()
        if np.linalg.norm(new - x) < tol:
            return new
        x = new
    return x
