"""Example user mechanisms for ``dpaudit attack --mechanism`` (and the tests): counting queries.

``laplace_count`` is a correct epsilon = 1 Laplace count (sensitivity 1 under add/remove);
``leaky_count`` rounds the noise away when the count is odd, a bug a black-box audit must catch.
"""

from __future__ import annotations

import numpy as np


def laplace_count(dataset, rng):
    """Number of records plus Laplace(1) noise: epsilon = 1 (pure)."""
    return float(len(dataset)) + rng.laplace(0.0, 1.0)


def leaky_count(dataset, rng):
    """Like ``laplace_count`` but returns the exact count half the time for odd-sized datasets."""
    n = float(len(dataset))
    if len(dataset) % 2 == 1 and rng.random() < 0.5:
        return n
    return n + rng.laplace(0.0, 1.0)


def gaussian_sum(dataset, rng, size):
    """Batched: ``size`` releases of the clipped sum (records clipped to [0, 1]) plus N(0, 1) noise."""
    total = float(np.clip(np.asarray(dataset, dtype=float), 0.0, 1.0).sum())
    return total + rng.standard_normal(size)


gaussian_sum.batched = True
