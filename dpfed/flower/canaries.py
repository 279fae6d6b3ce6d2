"""Canary clients for a one-run audit of a Flower app (Andrew et al., ICLR 2024), replace-one design.

Each of ``k`` canaries has a fixed random unit direction ``u_j`` in the model's ``d`` dimensions and a
secret sign ``s_j = +-1`` drawn uniformly and independently; canary client ``j`` is always connected and
answers every training request with ``current + s_j C u_j`` (an update of norm exactly C). Flipping one
sign replaces one client's update by another of the same norm: a replace-one neighbour (sensitivity 2C),
the relation Flower's fixed-size sampler is accounted under. The auditor guesses each sign from the
released models (the one-run estimators take ``s_j = +1`` as "included"); the scores and estimates are the
attack's (``attacks.probes.flower_scores``).
"""

from __future__ import annotations

import numpy as np

from accounting.errors import require_number


def canary_direction(index: int, dim: int, seed: int) -> np.ndarray:
    """Canary ``index``'s random unit vector (its own generator, so a client draws only its own)."""
    vector = np.random.default_rng([int(seed), 0xCA4A, int(index)]).normal(size=int(dim))
    return vector / np.linalg.norm(vector)


def decoy_direction(index: int, dim: int, seed: int) -> np.ndarray:
    """A unit vector independent of every canary direction: what canary ``index`` sends instead of its own in
    a null audit (an update of the same norm, so clipping and noise see the same run)."""
    vector = np.random.default_rng([int(seed), 0xDEC0, int(index)]).normal(size=int(dim))
    return vector / np.linalg.norm(vector)


def canary_directions(count: int, dim: int, seed: int) -> np.ndarray:
    """``(count, dim)`` independent uniformly random unit vectors (row j = ``canary_direction(j)``)."""
    require_number("canaries", count, low=1, integer=True)
    require_number("dim", dim, low=2, integer=True)
    return np.stack([canary_direction(j, dim, seed) for j in range(int(count))])


def canary_signs(count: int, seed: int) -> np.ndarray:
    """Each canary's secret sign, +1 or -1 with probability 1/2 each, independently."""
    return np.where(np.random.default_rng([int(seed), 0x1AC]).random(int(count)) < 0.5, 1.0, -1.0)
