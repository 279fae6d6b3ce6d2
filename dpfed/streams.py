"""Named independent random streams of one run, all derived from one seed.

A private and a non-private run with the same seed share every public stream (losses, directions,
contexts) and differ only in the privacy stream; probes replay the public streams in both worlds.
A stream depends only on the seed and its name, so any two callers agree on it.
"""

from __future__ import annotations

import zlib

import numpy as np


def seed_sequence(seed) -> np.random.SeedSequence:
    """A SeedSequence from an int, a SeedSequence, a Generator (consumed once) or None (fresh entropy)."""
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(int(seed.integers(2**63)))
    if isinstance(seed, np.random.SeedSequence):
        return seed
    return np.random.SeedSequence(seed)


def named_generator(seed, name: str) -> np.random.Generator:
    """The stream ``name`` of ``seed`` (pass a SeedSequence to reuse one Generator-derived seed)."""
    seq = seed_sequence(seed)
    key = tuple(seq.spawn_key) + (zlib.crc32(name.encode()),)
    return np.random.default_rng(np.random.SeedSequence(seq.entropy, spawn_key=key))


def spawn_generators(seed, names: tuple[str, ...]) -> dict[str, np.random.Generator]:
    """One independent Generator per name, all from ``seed``."""
    seq = seed_sequence(seed)
    return {name: named_generator(seq, name) for name in names}
