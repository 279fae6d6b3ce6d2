"""One seed derivation for the whole project: named ``SeedSequence`` streams.

``named_sequence(seed, "audit", 2, "probe", "fts-server")`` is the stream of that name under ``seed``:
the same names always give the same stream, different names independent ones (the names are hashed
into the spawn key, so adding a stream never shifts the others, as positional spawning would).
"""

from __future__ import annotations

import hashlib

import numpy as np

from accounting.errors import ConfigurationError


def _word(name) -> int:
    """A 32-bit word for one name component (strings hashed, whole numbers as they are)."""
    if isinstance(name, (int, np.integer)) and not isinstance(name, bool) and 0 <= int(name) < 2**32:
        return int(name)
    digest = hashlib.sha256(str(name).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "little")


def named_sequence(seed, *names) -> np.random.SeedSequence:
    """The ``SeedSequence`` named ``names`` under the non-negative integer ``seed``."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigurationError("seed", f"must be a non-negative whole number, got {seed!r}")
    return np.random.SeedSequence(int(seed), spawn_key=tuple(_word(n) for n in names))


def named_seed(seed, *names) -> int:
    """A 63-bit integer seed for the stream named ``names`` (for APIs that take an int)."""
    state = named_sequence(seed, *names).generate_state(2, dtype=np.uint32)
    return int((int(state[0]) << 31) ^ int(state[1]))


def named_rng(seed, *names) -> np.random.Generator:
    """A Generator on the stream named ``names``."""
    return np.random.default_rng(named_sequence(seed, *names))
