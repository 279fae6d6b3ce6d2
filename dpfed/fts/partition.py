"""Equal-volume box partitions of [0, 1]^d into P sub-regions, and the agents' assignment to them.

Rules (the seed's distributed exploration, section 2.2 of the notes):
* ``d = 1``: P equal intervals, left to right.
* ``d >= 2``: either ``P = 2^k`` with ``k <= d`` (halve the first k dimensions; P = 4 in d = 2 gives the
  reference code's order [0,.5]x[0,.5], [0,.5]x[.5,1], [.5,1]x[0,.5], [.5,1]x[.5,1]), or ``P = m^d`` (an
  m-per-dimension grid, same lexicographic order).
Any other P raises ``ConfigurationError('subregions')``. Agent ``n`` (0-based) is assigned to ``n mod P``.
On a shared boundary a point belongs to the first matching box (as in the reference code).
"""

from __future__ import annotations

import itertools

import numpy as np

from accounting.errors import ConfigurationError, require_number
from dpfed.arrays import namespace_of


def box_partition(dim: int, subregions: int) -> np.ndarray:
    """Boxes of shape (P, 2, d): ``boxes[i, 0]`` lower and ``boxes[i, 1]`` upper corners."""
    dim = int(require_number("dim", dim, low=1, integer=True))
    p = int(require_number("subregions", subregions, low=1, integer=True))
    if dim == 1:
        splits = [p]
    else:
        k = p.bit_length() - 1
        m = int(round(p ** (1.0 / dim)))
        if 2**k == p and k <= dim:
            splits = [2] * k + [1] * (dim - k)
        elif m**dim == p:
            splits = [m] * dim
        else:
            raise ConfigurationError(
                "subregions",
                f"P = {p} does not split [0,1]^{dim} into equal boxes (use 2^k with k <= {dim}, or m^{dim})",
            )
    edges = [np.linspace(0.0, 1.0, s + 1) for s in splits]
    boxes = []
    for idx in itertools.product(*[range(s) for s in splits]):
        lower = [edges[j][i] for j, i in enumerate(idx)]
        upper = [edges[j][i + 1] for j, i in enumerate(idx)]
        boxes.append([lower, upper])
    return np.asarray(boxes, dtype=float)


def region_of(x, boxes):
    """Index of the first box containing each point of ``x`` (..., d); outside points are clipped first.

    ``x`` and ``boxes`` are arrays of one backend (``dpfed.arrays``)."""
    xp = namespace_of(boxes)
    x = xp.clip(xp.asarray(x, dtype=xp.float64), 0.0, 1.0)
    inside = xp.all((x[..., None, :] >= boxes[:, 0]) & (x[..., None, :] <= boxes[:, 1]), axis=-1)
    return xp.argmax(xp.astype(inside, xp.int8), axis=-1)


def assignment(num_slots: int, subregions: int) -> np.ndarray:
    """Sub-region of each agent slot: ``n mod P``."""
    return np.arange(int(num_slots)) % int(subregions)
