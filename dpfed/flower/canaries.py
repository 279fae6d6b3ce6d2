"""Canary clients for a one-run audit of a Flower app (Andrew et al., ICLR 2024).

Each of ``k`` canaries has a fixed random unit direction ``u_j`` in the model's ``d`` dimensions; an
inserted canary client answers every training request with ``current + C u_j`` (an update of norm exactly
C). After the run, each canary's score is the cosine of ``u_j`` with the final model delta. For a canary
that was never inserted, ``u_j`` is independent of the delta, so its cosine has the closed-form null of a
uniformly random unit vector in ``d`` dimensions: ``(cos + 1) / 2 ~ Beta((d-1)/2, (d-1)/2)`` (mean 0,
variance 1/d).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from accounting.errors import require_number
from accounting.exact import gaussian_epsilon


def canary_directions(count: int, dim: int, seed: int) -> np.ndarray:
    """``(count, dim)`` independent uniformly random unit vectors."""
    require_number("canaries", count, low=1, integer=True)
    require_number("dim", dim, low=2, integer=True)
    vectors = np.random.default_rng([int(seed), 0xCA4A]).normal(size=(count, dim))
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def canary_inclusion(count: int, seed: int) -> np.ndarray:
    """Which canaries are inserted: each independently with probability 1/2 (the one-run design)."""
    return np.random.default_rng([int(seed), 0x1AC]).random(count) < 0.5


def cosines(directions: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Cosine of each direction with the model delta (0 for a zero delta)."""
    delta = np.asarray(delta, dtype=float).ravel()
    norm = float(np.linalg.norm(delta))
    return directions @ delta / norm if norm > 0 else np.zeros(len(directions))


def null_cosine_sf(value, dim: int):
    """P[cos > value] for a random unit vector in ``dim`` dimensions (the unseen canary's null)."""
    a = (dim - 1) / 2.0
    return stats.beta.sf((np.asarray(value, dtype=float) + 1.0) / 2.0, a, a)


def null_cosines(count: int, dim: int, rng) -> np.ndarray:
    """``count`` draws of the null cosine (for simulated null audits)."""
    a = (dim - 1) / 2.0
    return 2.0 * np.random.default_rng(rng).beta(a, a, size=count) - 1.0


def gaussian_estimate(inserted_cosines, dim: int, delta: float) -> dict:
    """Andrew et al.'s estimate, simplified to equal variances: the inserted canaries' mean cosine in
    units of the null std 1/sqrt(d) taken as a GDP mu, and its epsilon at ``delta``. An estimate, not a
    bound: it assumes both score distributions are Gaussian with the null's variance."""
    values = np.asarray(inserted_cosines, dtype=float)
    mu = max(float(values.mean()) * np.sqrt(dim), 0.0) if values.size else 0.0
    return {"mu": mu, "epsilon": float(gaussian_epsilon(mu, delta)) if mu > 0 else 0.0,
            "mean_cosine": float(values.mean()) if values.size else None, "null_std": 1 / np.sqrt(dim)}
