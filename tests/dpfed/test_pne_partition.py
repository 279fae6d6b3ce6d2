"""Hierarchical partitions: index formula, children tile the parent, shared-seed determinism."""

import numpy as np
import pytest

from accounting.errors import ConfigurationError
from dpfed.pne.partition import Partition


def _descend(part, levels):
    nodes = part.root()
    for _ in range(levels):
        nodes = part.children(nodes)
    return nodes


@pytest.mark.parametrize(
    "k, dimension, split",
    [(2, "random", "midpoint"), (3, "cyclic", "midpoint"), (2, "random", "random"), (4, "random", "random")],
)
def test_children_are_all_k_and_tile_the_parent(k, dimension, split):
    part = Partition([[0.0, 1.0], [-2.0, 3.0]], k=k, dimension=dimension, split=split, seed=7)
    parents = _descend(part, 2)
    kids = part.children(parents)
    assert len(kids) == k * len(parents)
    for j, (h, i) in enumerate(parents.keys()):
        block = kids.take(slice(j * k, (j + 1) * k))
        # children (h+1, k*i - j) for j = 0..k-1: the seed paper's definition, all k of them
        assert sorted(block.index.tolist()) == [k * i - jj for jj in range(k - 1, -1, -1)]
        assert np.all(block.depth == h + 1)
        volumes = np.prod(block.hi - block.lo, axis=1)
        assert np.isclose(volumes.sum(), np.prod(parents.hi[j] - parents.lo[j]))
        assert np.all(block.lo >= parents.lo[j] - 1e-12) and np.all(block.hi <= parents.hi[j] + 1e-12)
        centres = block.centre
        # each child's centre lies in exactly that child
        for c_idx in range(k):
            assert block.contains(centres[c_idx]).sum() == 1


def test_midpoint_children_are_equal_sized_and_every_depth_tiles_the_domain():
    part = Partition([[0.0, 1.0], [0.0, 1.0]], seed=3)
    nodes = _descend(part, 6)
    volumes = np.prod(nodes.hi - nodes.lo, axis=1)
    assert np.allclose(volumes, 2.0**-6)
    assert sorted(nodes.index.tolist()) == list(range(1, 65))
    rng = np.random.default_rng(0)
    points = rng.uniform(size=(500, 2))
    inside = np.array([nodes.contains(p).sum() for p in points])
    assert np.all(inside == 1)  # a random point (a.s. off every edge) is in exactly one cell


def test_same_seed_same_cells_in_any_order_and_different_seed_differs():
    a = Partition([[0, 1], [0, 1], [0, 1]], seed=11)
    b = Partition([[0, 1], [0, 1], [0, 1]], seed=11)
    deep = _descend(a, 5)
    for j in (0, 7, 31):
        h, i = deep.keys()[j]
        rebuilt = b.node(h, i)
        assert np.array_equal(rebuilt.lo[0], deep.lo[j]) and np.array_equal(rebuilt.hi[0], deep.hi[j])
    other = _descend(Partition([[0, 1], [0, 1], [0, 1]], seed=12), 5)
    assert not np.array_equal(other.lo, deep.lo)


def test_random_dimension_is_roughly_uniform():
    part = Partition([[0, 1]] * 4, seed=5)
    dims = part.split_dimension(np.full(4000, 9), np.arange(1, 4001))
    counts = np.bincount(dims, minlength=4)
    # Binomial(4000, 1/4): std 27; 6 std margin, false-failure probability < 1e-8
    assert np.all(np.abs(counts - 1000) < 165)


def test_bad_partitions_are_configuration_errors():
    with pytest.raises(ConfigurationError, match="domain"):
        Partition([[1.0, 0.0]])
    with pytest.raises(ConfigurationError, match="k"):
        Partition([[0.0, 1.0]], k=1)
    with pytest.raises(ConfigurationError, match="split"):
        Partition([[0.0, 1.0]], split="golden")
