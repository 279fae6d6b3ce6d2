"""``SeedSequence(entropy).spawn(n)`` for many entropies at once, bit for bit, without its per-child cost.

numpy's ``SeedSequence`` hashes its entropy into a pool of four 32-bit words and its ``generate_state``
hashes the pool into output words; the algorithm is fixed (numpy documents the streams as stable).
``child_words`` reproduces it vectorised over entropies for a parent without a spawn key (a plain
``SeedSequence(entropy)``, 0 <= entropy < 2**128, pool size 4); ``generator`` builds a PCG64
``Generator`` from such words, as ``default_rng(child)`` would. ``tests/dpfed/test_pne_spawn.py``
compares both with numpy.
"""

from __future__ import annotations

import numpy as np
from numpy.random.bit_generator import ISeedSequence

POOL_SIZE = 4
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_MASK = 0xFFFFFFFF


def _hash_constants(count: int, init: int, mult: int) -> list[np.uint32]:
    """The multiplier sequence a hash uses: its i-th value is ``init * mult**(i+1)`` mod 2**32."""
    out, h = [], init
    for _ in range(count):
        h = (h * mult) & _MASK
        out.append(np.uint32(h))
    return out


_POOL_XOR = [np.uint32(_INIT_A)] + _hash_constants(20, _INIT_A, _MULT_A)  # xor before, multiply after


def _shift_mix(value: np.ndarray) -> np.ndarray:
    return value ^ (value >> np.uint32(16))


def _hashmix(value: np.ndarray, step: int) -> np.ndarray:
    return _shift_mix((value ^ _POOL_XOR[step]) * _POOL_XOR[step + 1])


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _shift_mix(np.uint32(_MIX_L) * x - np.uint32(_MIX_R) * y)


def child_words(entropies, children: int, words: int) -> np.ndarray:
    """``SeedSequence(e).spawn(children)[c].generate_state(words)`` for every entropy e and child c:
    uint32 array (len(entropies), children, words)."""
    values = [int(e) for e in entropies]
    if any(not 0 <= e < 2**128 for e in values):
        raise ValueError("child_words needs entropies in [0, 2**128)")
    data = np.array([[(e >> (32 * j)) & _MASK for j in range(POOL_SIZE)] for e in values], dtype=np.uint32)
    data = data.reshape(-1, 1, POOL_SIZE).repeat(children, axis=1)
    spawn_key = np.broadcast_to(np.arange(children, dtype=np.uint32), data.shape[:2])
    pool, step = [], 0
    for i in range(POOL_SIZE):  # the entropy words, then the mixing of every word into every other
        pool.append(_hashmix(data[..., i], step))
        step += 1
    for src in range(POOL_SIZE):
        for dst in range(POOL_SIZE):
            if src != dst:
                pool[dst] = _mix(pool[dst], _hashmix(pool[src], step))
                step += 1
    for dst in range(POOL_SIZE):  # the child's spawn key, the one entropy word beyond the pool
        pool[dst] = _mix(pool[dst], _hashmix(spawn_key, step))
        step += 1
    out = np.empty(data.shape[:2] + (words,), dtype=np.uint32)
    consts = [np.uint32(_INIT_B)] + _hash_constants(words, _INIT_B, _MULT_B)
    for i in range(words):
        out[..., i] = _shift_mix((pool[i % POOL_SIZE] ^ consts[i]) * consts[i + 1])
    return out


def as_uint64(words: np.ndarray) -> np.ndarray:
    """Pairs of uint32 words (last axis) as uint64, low word first (``generate_state(n, np.uint64)``)."""
    pairs = words.astype(np.uint64).reshape(words.shape[:-1] + (words.shape[-1] // 2, 2))
    return pairs[..., 0] | (pairs[..., 1] << np.uint64(32))


class _FixedState(ISeedSequence):
    """A seed sequence that hands PCG64 the four uint64 words it asks for (already generated)."""

    def __init__(self, state: np.ndarray):
        self.state = state

    def generate_state(self, n_words, dtype=np.uint32):
        if n_words != len(self.state) or np.dtype(dtype) != np.uint64:
            raise ValueError("this seed sequence only holds PCG64's four uint64 seed words")
        return self.state


def generator(state: np.ndarray) -> np.random.Generator:
    """``default_rng(child)`` from ``as_uint64(child.generate_state(8))`` (the words PCG64 seeds from)."""
    return np.random.Generator(np.random.PCG64(_FixedState(np.ascontiguousarray(state))))
