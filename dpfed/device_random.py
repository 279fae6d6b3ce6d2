"""The random streams of a batch of runs on a PyTorch device: one ``torch.Generator`` per call, draws
made in batched form on the device (no host draws, no host-to-device copies, no synchronisation).

``BatchStreams`` has the draws of ``dpfed.trials.TrialStreams`` that the algorithms use (``random``,
``standard_normal``, ``normal``, ``uniform``; ``size[0]`` = the number of runs K) and the ``xp`` /
``device`` of a backend generator, so ``accounting.mechanisms`` releases draw from it too. Its generator
is seeded by a 64-bit digest of the K runs' seeds (a child spawned from each run's seed sequence, as
``dpfed.trials.split_streams`` spawns the NumPy streams) and of the stream's name. Hence:

* the same seeds in one call give the same runs, on one device type (the CPU's and CUDA's generators
  differ, and so do the NumPy backend's per-run streams: the same seed is another run on each backend);
* a run's numbers depend on the other runs of its call (they share one generator): run k of a batch is
  not ``run_fts(seed_k)`` on this backend, and the runs of a probe are reproducible for the same seed and
  the same runs per call (``attacks.probes.fts_end_to_end``: one call per batch of trials).

Distinct runs draw disjoint elements of one generator's output, so they are independent. Uniforms are
float64 in [0, 1) and normals float64 (``torch.rand`` / ``torch.randn``): the server's release noise
comes from them and its law is what the accountants analyse.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from accounting.mechanisms import as_generator


def call_seeds(rngs: Sequence, streams: Sequence[str]) -> dict[str, int]:
    """A 63-bit seed per named stream of a call, from its runs' seeds: one child spawned from each run's
    seed sequence (so a generator used twice gives different runs, and a seed always the same ones),
    digested with the stream's name."""
    words = np.empty((len(rngs), 2), dtype=np.uint64)
    for k, rng in enumerate(rngs):
        words[k] = as_generator(rng).bit_generator.seed_seq.spawn(1)[0].generate_state(2, np.uint64)
    data = words.tobytes()
    seeds = {}
    for name in streams:
        digest = hashlib.blake2b(data, digest_size=8, person=name.encode()[:16])
        seeds[name] = int.from_bytes(digest.digest(), "little") & (2**63 - 1)
    return seeds


class BatchStreams:
    """K runs' random numbers from one torch generator on ``device`` (module docstring)."""

    draws_on_device = True  # draw for every run and select, rather than subset (no synchronisation)

    def __init__(self, runs: int, seed: int, device):
        import array_api_compat.torch as xp
        import torch

        self.xp, self._torch, self.device = xp, torch, torch.device(device)
        self.runs = int(runs)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(seed))

    def __len__(self) -> int:
        return self.runs

    def _check(self, size) -> tuple[int, ...]:
        shape = (int(size),) if np.ndim(size) == 0 and size is not None else tuple(int(s) for s in size or ())
        if not shape or shape[0] != self.runs:
            raise ValueError(f"a draw from {self.runs} trial streams needs size[0] = {self.runs}, got {size!r}")
        return shape

    def random(self, size=None, dtype=None):
        """Uniform in [0, 1), float64 unless ``dtype``."""
        torch = self._torch
        dtype = dtype or torch.float64
        return torch.rand(self._check(size), generator=self.generator, device=self.device, dtype=dtype)

    def standard_normal(self, size=None, dtype=None):
        torch = self._torch
        dtype = dtype or torch.float64
        return torch.randn(self._check(size), generator=self.generator, device=self.device, dtype=dtype)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return loc + scale * self.standard_normal(size)

    def uniform(self, low=0.0, high=1.0, size=None):
        return low + (high - low) * self.random(size)
