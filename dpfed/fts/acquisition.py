"""Cheap batched maximisation of sampled functions over [0, 1]^d: random candidates + local refinement.

The reference code evaluates 1000 uniform points and then runs 20 L-BFGS-B restarts per agent. Here one
shared set of random candidates is scored for every agent at once (one feature evaluation, one matrix
product), and the best candidate of each agent is refined by a few rounds of Gaussian perturbations
with shrinking step sizes (batched over agents). This finds near-maxima of RFF functions at a small
fraction of the cost; it is a heuristic, like the reference's multi-start optimiser.
"""

from __future__ import annotations

import numpy as np

from accounting.mechanisms import as_generator
from dpfed.fts.partition import region_of

REFINE_SCALES = (0.1, 0.03, 0.01, 0.003, 0.001)


class LinearFunctions:
    """Per-agent functions ``f_n(x) = features(x) @ weights[n] + offsets[n]``."""

    def __init__(self, features, weights, offsets=None):
        self.features = features
        self.weights = np.atleast_2d(np.asarray(weights, dtype=float))
        self.offsets = np.zeros(self.weights.shape[0]) if offsets is None else np.asarray(offsets, float)

    def __len__(self) -> int:
        return self.weights.shape[0]

    def __call__(self, x) -> np.ndarray:
        """``x`` shared (K, d) or per function (n, K, d); returns (n, K)."""
        phi = self.features(x)
        if phi.ndim == 2:
            return self.weights @ phi.T + self.offsets[:, None]
        return (phi @ self.weights[:, :, None])[..., 0] + self.offsets[:, None]


class PiecewiseFunction:
    """The DE broadcast as a function: ``f(x) = features(x) @ blocks[i(x)]``, i(x) = sub-region of x."""

    def __init__(self, features, blocks, boxes):
        self.features = features
        self.blocks = np.atleast_2d(np.asarray(blocks, dtype=float))
        self.boxes = boxes

    def __len__(self) -> int:
        return 1

    def __call__(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        shared = x.ndim == 2
        if shared:
            x = x[None]
        phi = self.features(x)  # (n, K, M)
        values = np.sum(phi * self.blocks[region_of(x, self.boxes)], axis=-1)
        return values


def maximise(
    functions,
    dim: int,
    rng,
    candidates: int = 500,
    refine_steps: int = 3,
    refine_samples: int = 12,
    start=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Approximate maximiser and maximum of each of the ``len(functions)`` functions on [0, 1]^d.

    ``start`` (n, d), optional: one extra candidate per function. Returns ``(x, value)``, shapes (n, d), (n,).
    """
    rng = as_generator(rng)
    cand = rng.random((int(candidates), int(dim)))
    values = functions(cand)  # (n, C)
    best_idx = np.argmax(values, axis=1)
    best_x = cand[best_idx]
    best_v = values[np.arange(values.shape[0]), best_idx]
    n = best_x.shape[0]
    if start is not None:
        start = np.asarray(start, dtype=float)
        v0 = functions(start[:, None, :])[:, 0]
        best_x = np.where((v0 > best_v)[:, None], start, best_x)
        best_v = np.maximum(v0, best_v)
    for scale in REFINE_SCALES[: int(refine_steps)]:
        prop = np.clip(
            best_x[:, None, :] + scale * rng.standard_normal((n, int(refine_samples), int(dim))), 0.0, 1.0
        )
        v = functions(prop)
        j = np.argmax(v, axis=1)
        vj = v[np.arange(n), j]
        better = vj > best_v
        best_x = np.where(better[:, None], prop[np.arange(n), j], best_x)
        best_v = np.where(better, vj, best_v)
    return best_x, best_v
