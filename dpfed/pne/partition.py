"""Hierarchical partitions of a box domain, shared by the server and every client through a seed.

A partition is infinitely deep: node ``(h, i)`` (depth ``h >= 0``, 1-based index ``1 <= i <= k^h``) is a
box cell; the root ``(0, 1)`` is the whole domain and the ``k`` children of ``(h, i)`` are
``(h+1, k*i - j)`` for ``j = 0..k-1`` (all ``k`` of them; the seed paper's ``j in [k-1]`` drops one).
Nodes are pulled at their cell centre.

Which dimension a node splits along (and, for ``split="random"``, where) is a pure function of
``(seed, h, i)`` computed by a counter-based hash, so any party holding the seed rebuilds the same
cells in any order, without exchanging geometry and without a shared random stream.

* ``dimension="random"``: uniformly random dimension per node (the experiments' random binary
  partition); ``dimension="cyclic"``: dimension ``h mod d`` (a deterministic k-ary partition).
* ``split="midpoint"``: ``k`` equal-sized children (the seed's wording, the default);
  ``split="random"``: ``k - 1`` uniformly random cut points (PyXAB's RandomBinaryPartition style).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, elementwise on uint64 (wrap-around arithmetic)."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        return z ^ (z >> np.uint64(31))


def node_hash(seed: int, depth, index, salt: int = 0) -> np.ndarray:
    """A 64-bit hash of (seed, depth, index, salt), vectorised over ``depth``/``index``."""
    s = np.uint64(int(seed) % 2**64)
    d = np.asarray(depth, dtype=np.int64).astype(np.uint64)
    i = np.asarray(index, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        x = _splitmix64(np.full(np.broadcast_shapes(d.shape, i.shape), s) ^ np.uint64(salt))
        x = _splitmix64(x + d)
        return _splitmix64(x + i)


def node_uniform(seed: int, depth, index, salt: int) -> np.ndarray:
    """Uniform numbers in (0, 1) derived from ``node_hash`` (53 random bits)."""
    bits = node_hash(seed, depth, index, salt) >> np.uint64(11)
    return (bits.astype(np.float64) + 0.5) / 2.0**53


@dataclass(frozen=True)
class Nodes:
    """A set of nodes: depths and 1-based indices (n,), cell bounds ``lo``/``hi`` (n, d)."""

    depth: np.ndarray
    index: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def __len__(self) -> int:
        return int(self.depth.shape[0])

    @property
    def centre(self) -> np.ndarray:
        """Representative points (cell centres), shape (n, d)."""
        return 0.5 * (self.lo + self.hi)

    def take(self, selection) -> Nodes:
        """The sub-set selected by a boolean mask or index array."""
        return Nodes(self.depth[selection], self.index[selection], self.lo[selection], self.hi[selection])

    def keys(self) -> list[tuple[int, int]]:
        """(depth, index) pairs as Python ints (a new list; the pairs are built once per node set, whose
        arrays are never changed after construction)."""
        pairs = self.__dict__.get("_keys")
        if pairs is None:
            pairs = tuple(zip(self.depth.tolist(), self.index.tolist(), strict=True))
            object.__setattr__(self, "_keys", pairs)
        return list(pairs)

    def contains(self, point) -> np.ndarray:
        """Boolean (n,): which cells contain ``point`` (closed boxes)."""
        p = np.asarray(point, dtype=float)
        return np.all((self.lo <= p) & (p <= self.hi), axis=1)


class Partition:
    """A k-ary hierarchical partition of the box ``domain`` (shape (d, 2): low, high per dimension).

    Parameters
    ----------
    domain : box bounds, shape (d, 2) with low < high.
    k : number of children per node (>= 2).
    dimension : ``"random"`` (hashed per node) or ``"cyclic"`` (depth mod d).
    split : ``"midpoint"`` (equal-sized children) or ``"random"`` (hashed uniform cut points).
    seed : the shared partition seed.
    """

    def __init__(self, domain, k: int = 2, dimension: str = "random", split: str = "midpoint", seed: int = 0):
        box = np.asarray(domain, dtype=float)
        if box.ndim == 1 and box.shape == (2,):
            box = box[None, :]
        if box.ndim != 2 or box.shape[1] != 2 or box.shape[0] < 1 or not np.all(np.isfinite(box)):
            raise ConfigurationError("domain", "expected finite bounds of shape (d, 2)")
        if np.any(box[:, 1] <= box[:, 0]):
            raise ConfigurationError("domain", "every dimension needs low < high")
        self.k = int(require_number("k", k, low=2, integer=True))
        if dimension not in ("random", "cyclic"):
            raise ConfigurationError("dimension", f"unknown rule {dimension!r}; choose random or cyclic")
        if split not in ("midpoint", "random"):
            raise ConfigurationError("split", f"unknown rule {split!r}; choose midpoint or random")
        self.domain = box
        self.dimension = dimension
        self.split = split
        self.seed = int(require_number("partition_seed", seed, low=0, integer=True))
        # indices go up to k^h and must fit an int64
        self.max_depth = int(math.floor(62 / math.log2(self.k)))

    @property
    def dim(self) -> int:
        return int(self.domain.shape[0])

    def root(self) -> Nodes:
        return Nodes(
            np.zeros(1, dtype=np.int64),
            np.ones(1, dtype=np.int64),
            self.domain[None, :, 0].copy(),
            self.domain[None, :, 1].copy(),
        )

    def split_dimension(self, depth, index) -> np.ndarray:
        """The dimension each node (h, i) is split along."""
        depth = np.asarray(depth, dtype=np.int64)
        if self.dimension == "cyclic" or self.dim == 1:
            return np.broadcast_to(depth % self.dim, np.broadcast_shapes(depth.shape, np.shape(index)))
        return (node_hash(self.seed, depth, index, salt=1) % np.uint64(self.dim)).astype(np.int64)

    def cut_fractions(self, depth, index) -> np.ndarray:
        """Sorted cut positions in (0, 1), shape (n, k - 1), relative to the split side of each node."""
        depth = np.atleast_1d(np.asarray(depth, dtype=np.int64))
        index = np.atleast_1d(np.asarray(index, dtype=np.int64))
        if self.split == "midpoint":
            row = np.arange(1, self.k, dtype=float) / self.k
            return np.broadcast_to(row, (depth.shape[0], self.k - 1))
        draws = np.stack([node_uniform(self.seed, depth, index, salt=2 + j) for j in range(self.k - 1)], axis=1)
        return np.sort(draws, axis=1)

    def children(self, nodes: Nodes) -> Nodes:
        """All ``k`` children of every node, parent-major, child indices ``k*(i-1)+1 .. k*i`` in order."""
        n, k = len(nodes), self.k
        if n and int(nodes.depth.max()) + 1 > self.max_depth:
            raise ConfigurationError("depth", f"partition deeper than {self.max_depth} levels")
        dims = self.split_dimension(nodes.depth, nodes.index)
        cuts = self.cut_fractions(nodes.depth, nodes.index)  # (n, k-1)
        rows = np.arange(n)
        low_side = nodes.lo[rows, dims]
        width = nodes.hi[rows, dims] - low_side
        edges = np.concatenate([np.zeros((n, 1)), cuts, np.ones((n, 1))], axis=1)  # (n, k+1)
        bounds = low_side[:, None] + width[:, None] * edges
        bounds[:, -1] = nodes.hi[rows, dims]  # exact upper edge, no rounding drift
        lo = np.repeat(nodes.lo, k, axis=0)
        hi = np.repeat(nodes.hi, k, axis=0)
        child_rows = np.arange(n * k)
        child_dims = np.repeat(dims, k)
        lo[child_rows, child_dims] = bounds[:, :-1].reshape(-1)
        hi[child_rows, child_dims] = bounds[:, 1:].reshape(-1)
        depth = np.repeat(nodes.depth + 1, k)
        index = (np.repeat(nodes.index, k) - 1) * k + np.tile(np.arange(1, k + 1), n)
        return Nodes(depth, index, lo, hi)

    def node(self, depth: int, index: int) -> Nodes:
        """The single node (h, i), rebuilt from the root along its ancestry."""
        depth = int(require_number("depth", depth, low=0, high=self.max_depth, integer=True))
        index = int(require_number("index", index, low=1, high=self.k**depth, integer=True))
        path = []
        i = index
        for _ in range(depth):
            path.append((i - 1) % self.k)
            i = (i - 1) // self.k + 1
        current = self.root()
        for offset in reversed(path):
            current = self.children(current).take(slice(offset, offset + 1))
        return current

    def containing(self, point, depth: int) -> set[tuple[int, int]]:
        """Keys of the nodes at ``depth`` whose closed cell contains ``point`` (two or more on an edge)."""
        nodes = self.root()
        for _ in range(int(depth)):
            kids = self.children(nodes)
            nodes = kids.take(kids.contains(point))
        return set(nodes.keys())

    def describe(self) -> dict:
        return {
            "domain": self.domain.tolist(),
            "k": self.k,
            "dimension": self.dimension,
            "split": self.split,
            "seed": self.seed,
        }
