"""Array backends for probes: NumPy (the default) or PyTorch on a CPU or a CUDA device.

The mechanism module's release and the probes' scoring are written once against the array API
(``array_api_compat`` serves NumPy and PyTorch alike); what differs is the random generator. A batch's
generator is built from the batch's own ``SeedSequence`` (``attacks.executors.base``): a NumPy
``Generator``, or a ``TorchRandom`` whose ``torch.Generator`` is seeded from that sequence, so one seed
gives the same scores on every executor within a backend (the two backends draw different numbers).
"""

from __future__ import annotations

import numpy as np

from accounting.errors import ConfigurationError
from dpfed.arrays import check_backend


class TorchRandom:
    """The drawing methods of ``numpy.random.Generator`` that the mechanisms use, on PyTorch tensors
    (float64) of one device, from a ``torch.Generator`` seeded by a NumPy ``SeedSequence``."""

    def __init__(self, seed: np.random.SeedSequence, device: str = "cpu"):
        import array_api_compat.torch as xp
        import torch

        self.xp, self.device, self._torch = xp, torch.device(device), torch
        self.seed_sequence = seed  # for probes that draw on the host (``host_generator``)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(seed.generate_state(1, np.uint64)[0]) & (2**63 - 1))

    def _shape(self, size) -> tuple:
        return () if size is None else (int(size),) if np.isscalar(size) else tuple(int(s) for s in size)

    def random(self, size=None):
        return self._torch.rand(
            self._shape(size), generator=self.generator, device=self.device, dtype=self._torch.float64
        )

    def standard_normal(self, size=None):
        return self._torch.randn(
            self._shape(size), generator=self.generator, device=self.device, dtype=self._torch.float64
        )

    def normal(self, loc=0.0, scale=1.0, size=None):
        draws = self.standard_normal(size)
        if np.ndim(scale) == 0 and np.ndim(loc) == 0:  # in place: no temporaries of the batch's size
            return draws.mul_(float(scale)).add_(float(loc))
        return loc + scale * draws

    def laplace(self, loc=0.0, scale=1.0, size=None):
        u = self.random(size) - 0.5  # inverse CDF of the Laplace law
        return loc - scale * self._torch.sign(u) * self._torch.log1p(-2.0 * self._torch.abs(u))

    def integers(self, low, high=None, size=None):
        low, high = (0, low) if high is None else (low, high)
        return self._torch.randint(int(low), int(high), self._shape(size), generator=self.generator, device=self.device)


def on_backend(probe, backend: str, device: str = "cpu"):
    """``probe`` set to draw and score on ``backend``/``device`` (ConfigurationError if it cannot)."""
    check_backend(backend, device)
    supported = getattr(probe, "backends", ("numpy",))
    if backend not in supported:
        name = getattr(probe, "registry_name", probe.name)
        raise ConfigurationError(
            "backend",
            f"probe {name!r} has no {backend} path (it runs on {', '.join(supported)} only: leave out --backend)",
        )
    if backend != "numpy" and getattr(probe, "bug", None) not in (None, "none"):
        raise ConfigurationError("backend", "planted-bug mechanisms run on the numpy backend only")
    probe.array_backend, probe.device = backend, device
    return probe


def batch_generator(probe, seed: np.random.SeedSequence):
    """The random generator of one batch on the probe's backend."""
    if getattr(probe, "array_backend", "numpy") == "torch":
        return TorchRandom(seed, getattr(probe, "device", "cpu"))
    return np.random.default_rng(seed)


def free_device_memory(device: str) -> int | None:
    """Free bytes on a CUDA device (None for the cpu, where ``psutil`` answers), counting what PyTorch's
    allocator holds in its cache but no tensor uses (so an earlier batch's cached blocks do not shrink the
    next batch)."""
    import torch

    if torch.device(device).type != "cuda":
        return None
    where = torch.device(device)
    free, _total = torch.cuda.mem_get_info(where)
    cached = torch.cuda.memory_reserved(where) - torch.cuda.memory_allocated(where)
    return int(free + max(0, cached))


DEVICE_MEMORY_SHARE = 0.5  # of a CUDA device's free memory, for one batch


def device_batch_size(probe, device: str, free: int | None = None) -> int | None:
    """Trials per batch on a CUDA device: the largest power of two whose working memory
    (``probe.device_bytes_per_trial()`` each) fits in ``DEVICE_MEMORY_SHARE`` of its free memory (``free``
    bytes, default: measured now); None on a cpu, where the probe's own batch size stands. A power of two,
    so that small changes in free memory do not change the batches (a batch's scores depend on its size on
    the torch backend: pass ``--batch-size`` to reproduce a run on another device)."""
    if free is None:
        free = free_device_memory(device)
    if free is None:
        return None
    per_trial = max(1, int(probe.device_bytes_per_trial()))
    fits = max(1, int(DEVICE_MEMORY_SHARE * free) // per_trial)
    return 1 << (fits.bit_length() - 1)


PILOT_DEVICE_BYTES_PER_TRIAL = 48  # both worlds' pilot scores held, one world sorted (values, indices, scratch)


def pilot_device(probe, pilot_trials: int, free: int | None = None) -> str | None:
    """The CUDA device a torch probe's pilot scores stay on (sorted there, ``attacks.estimators.grid``), or
    None to bring them to the host: on a cpu (the same memory; NumPy's sort is the faster one there,
    BENCHMARKS.md), and where they would not fit in the device memory the batches leave free
    (``1 - DEVICE_MEMORY_SHARE`` of ``free`` bytes, default: measured now)."""
    if getattr(probe, "array_backend", "numpy") != "torch":
        return None
    device = getattr(probe, "device", "cpu")
    if free is None:
        free = free_device_memory(device)
    if free is None or PILOT_DEVICE_BYTES_PER_TRIAL * int(pilot_trials) > (1 - DEVICE_MEMORY_SHARE) * free:
        return None
    return device


def host_generator(rng) -> np.random.Generator:
    """The NumPy generator a batch would have on the numpy backend (for probes that keep their draws on
    the host so that one seed means the same runs on both backends)."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng.seed_sequence)


def to_numpy(scores) -> np.ndarray:
    """Scores of any backend as a NumPy float64 array (copied from the device if needed)."""
    if type(scores).__module__.split(".")[0] == "torch":
        return scores.detach().to("cpu").double().numpy()
    return np.asarray(scores, dtype=float)
