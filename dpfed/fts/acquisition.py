"""Cheap batched maximisation of sampled functions over [0, 1]^d: random candidates + local refinement.

The reference code evaluates 1000 uniform points and then runs 20 L-BFGS-B restarts per agent. Here one
shared set of random candidates is scored for every agent at once (one feature evaluation, one matrix
product), and the best candidate of each agent is refined by a few rounds of Gaussian perturbations
with shrinking step sizes (batched over agents). This finds near-maxima of RFF functions at a small
fraction of the cost; it is a heuristic, like the reference's multi-start optimiser. Functions and
points are arrays of one backend (``dpfed.arrays``); the generator draws on it.
"""

from __future__ import annotations

import numpy as np

from accounting.mechanisms import as_generator
from dpfed.arrays import float_dtype, namespace_of
from dpfed.fts.partition import region_of

REFINE_SCALES = (0.1, 0.03, 0.01, 0.003, 0.001)


class LinearFunctions:
    """Functions ``f_n(x) = features(x) @ weights[..., n, :] + offsets[..., n]``.

    ``weights`` has shape batch + (n, M) (batch: an optional leading trial axis matching stacked
    features); ``dtype`` float32 scores in single precision (the maximiser is a heuristic anyway).
    """

    def __init__(self, features, weights, offsets=None, dtype=np.float64):
        self.features = features
        xp = self.xp = namespace_of(features.phases)
        self.weights = _at_least_2d(xp, weights)
        self.offsets = xp.zeros_like(self.weights[..., 0]) if offsets is None else xp.asarray(offsets, dtype=xp.float64)
        self.dtype = float_dtype(xp, dtype)

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return self.weights.shape[:-2]

    def __len__(self) -> int:
        return self.weights.shape[-2]

    def __call__(self, x):
        """``x`` shared by all functions, batch + (K, d), or per function, batch + (n, K, d); -> batch + (n, K)."""
        xp = self.xp
        x = xp.asarray(x, dtype=xp.float64)
        phi = self.features(x, dtype=self.dtype)
        weights = xp.astype(self.weights, self.dtype, copy=False)
        offsets = xp.astype(self.offsets, self.dtype, copy=False)[..., None]
        if x.ndim == self.weights.ndim:
            return weights @ phi.mT + offsets
        return (phi @ weights[..., None])[..., 0] + offsets


class PiecewiseFunction:
    """The DE broadcast as a function: ``f(x) = features(x) @ blocks[..., i(x), :]``, i(x) = sub-region of x.

    ``blocks`` has shape batch + (P, M); it is one function per batch element.
    """

    def __init__(self, features, blocks, boxes, dtype=np.float64):
        self.features = features
        xp = self.xp = namespace_of(features.phases)
        self.blocks = _at_least_2d(xp, blocks)
        self.boxes = xp.asarray(boxes, dtype=xp.float64, device=self.blocks.device)
        self.dtype = float_dtype(xp, dtype)

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return self.blocks.shape[:-2]

    def __len__(self) -> int:
        return 1

    def __call__(self, x):
        """``x`` batch + (K, d) or batch + (1, K, d); returns batch + (1, K)."""
        xp = self.xp
        x = xp.asarray(x, dtype=xp.float64)
        if x.ndim == self.blocks.ndim:
            x = x[..., None, :, :]
        phi = self.features(x, dtype=self.dtype)  # batch + (1, K, M)
        regions = region_of(x, self.boxes)[..., None]  # batch + (1, K, 1)
        blocks = xp.take_along_axis(self.blocks[..., None, :, :], regions, axis=-2)
        return xp.sum(phi * xp.astype(blocks, self.dtype, copy=False), axis=-1)


def maximise(
    functions,
    dim: int,
    rng,
    candidates: int = 500,
    refine_steps: int = 3,
    refine_samples: int = 12,
    start=None,
):
    """Approximate maximiser and maximum of each of the ``len(functions)`` functions on [0, 1]^d.

    Candidates are drawn with shape ``functions.batch_shape + (candidates, d)`` (with a ``TrialStreams``
    each trial draws its own). ``start`` batch + (n, d), optional: one extra candidate per function.
    Returns ``(x, value)``, shapes batch + (n, d) and batch + (n,).
    """
    rng = as_generator(rng)
    xp = getattr(functions, "xp", np)
    batch, dim = tuple(functions.batch_shape), int(dim)
    cand = rng.random(batch + (int(candidates), dim))
    values = functions(cand)  # batch + (n, C)
    best_idx = xp.argmax(values, axis=-1)[..., None]
    best_x = xp.take_along_axis(cand, best_idx, axis=-2)
    best_v = xp.take_along_axis(values, best_idx, axis=-1)[..., 0]
    n = best_x.shape[-2]
    if start is not None:
        start = xp.asarray(start, dtype=xp.float64)
        v0 = functions(start[..., None, :])[..., 0]
        best_x = xp.where((v0 > best_v)[..., None], start, best_x)
        best_v = xp.maximum(v0, best_v)
    for scale in REFINE_SCALES[: int(refine_steps)]:
        noise = rng.standard_normal(batch + (n, int(refine_samples), dim))
        prop = xp.clip(best_x[..., None, :] + scale * noise, 0.0, 1.0)
        v = functions(prop)
        j = xp.argmax(v, axis=-1)[..., None]
        vj = xp.take_along_axis(v, j, axis=-1)[..., 0]
        better = vj > best_v
        best_x = xp.where(better[..., None], xp.take_along_axis(prop, j[..., None], axis=-2)[..., 0, :], best_x)
        best_v = xp.where(better, vj, best_v)
    return best_x, best_v


def _at_least_2d(xp, values):
    """``values`` as a float64 array of at least two dimensions (leading axes of length 1 added)."""
    values = xp.asarray(values, dtype=xp.float64)
    return xp.reshape(values, (1,) * (2 - values.ndim) + tuple(values.shape)) if values.ndim < 2 else values
