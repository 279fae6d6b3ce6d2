"""Independent random streams of one bandit run, all derived from one seed.

Separate streams mean that a private and a non-private run with the same seed share the partition,
the local objectives and the observation noise, and differ only in the privacy noise. The streams
are the four children of the run's ``SeedSequence``: partition seed, objective, observation, privacy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpfed.pne.spawn import as_uint64, child_words, generator


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
        return cls(
            int(part.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1)),
            np.random.default_rng(obj),
            np.random.default_rng(obs),
            np.random.default_rng(priv),
        )

    @classmethod
    def batch(cls, seeds) -> list[RunStreams]:
        """``[from_seed(s) for s in seeds]`` (same streams, Generators consumed in order), with the
        children of integer seeds derived together (``dpfed.pne.spawn``). A SeedSequence takes
        ``from_seed``'s path, so it is marked as spawned from, as before."""
        entropies = [_plain_entropy(seed) for seed in seeds]
        plain = [e for e in entropies if e is not None]
        words = child_words(plain, 4, 8) if plain else np.empty((0, 4, 8), dtype=np.uint32)
        states = as_uint64(words)  # (K, 4, 4)
        out, row = [], 0
        for seed, entropy in zip(seeds, entropies, strict=True):
            if entropy is None:
                out.append(cls.from_seed(seed))
                continue
            state = states[row]
            out.append(
                cls(int(state[0, 0] >> np.uint64(1)), generator(state[1]), generator(state[2]), generator(state[3]))
            )
            row += 1
        return out


def _plain_entropy(seed) -> int | None:
    """The integer entropy ``from_seed`` would hash, where ``child_words`` covers it (else None)."""
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**63))
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and 0 <= int(seed) < 2**128:
        return int(seed)
    return None
