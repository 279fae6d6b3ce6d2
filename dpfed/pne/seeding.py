"""Independent random streams of one bandit run, all derived from one seed.

Separate streams mean that a private and a non-private run with the same seed share the partition,
the local objectives and the observation noise, and differ only in the privacy noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RunStreams:
    partition_seed: int
    objective: np.random.Generator
    observation: np.random.Generator
    privacy: np.random.Generator

    @classmethod
    def from_seed(cls, seed) -> RunStreams:
        """Streams from an int seed, a SeedSequence, a Generator (consumed once) or None (fresh entropy)."""
        if isinstance(seed, np.random.Generator):
            seq = np.random.SeedSequence(int(seed.integers(2**63)))
        elif isinstance(seed, np.random.SeedSequence):
            seq = seed
        else:
            seq = np.random.SeedSequence(seed)
        part, obj, obs, priv = seq.spawn(4)
        return cls(int(part.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1)),
                   np.random.default_rng(obj), np.random.default_rng(obs), np.random.default_rng(priv))
