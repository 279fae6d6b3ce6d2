"""Array backends of the batched algorithms: NumPy (the default) or PyTorch tensors on a CPU or CUDA device.

The algorithms' arithmetic is written once against an array namespace ``xp``: NumPy itself (so the NumPy
path stays bit for bit what it was) or ``array_api_compat.torch``; ``namespace_of`` and ``device_of``
read both off an existing array. Randomness: on NumPy every run keeps its own ``TrialStreams``
(``dpfed.trials``); on torch the runs of a call draw together on the device
(``dpfed.device_random.BatchStreams``), so nothing is drawn on the host or copied per draw. The same
seed therefore gives the same run within one backend, not across backends.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError
from accounting.mechanisms import array_namespace

BACKENDS = ("numpy", "torch")


def check_backend(backend: str, device: str) -> None:
    """ConfigurationError unless ``backend`` on ``device`` can run here."""
    if backend not in BACKENDS:
        raise ConfigurationError("backend", f"choose one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "numpy":
        if device != "cpu":
            raise ConfigurationError("device", "the numpy backend runs on the cpu; use --backend torch")
        return
    import torch

    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError):
        raise ConfigurationError("device", f"not a torch device: {device!r} (cpu or cuda)") from None
    if kind not in ("cpu", "cuda"):
        raise ConfigurationError("device", f"choose cpu or cuda, got {device!r}")
    if kind == "cuda" and not torch.cuda.is_available():
        raise ConfigurationError("device", "no CUDA device is available here; use --device cpu")


def namespace_of(array):
    """NumPy for NumPy arrays (and anything else), ``array_api_compat``'s namespace for tensors."""
    return array_namespace(None, array)


def device_of(array):
    """The device an array lives on ("cpu" for NumPy)."""
    import array_api_compat

    return array_api_compat.device(array)


@dataclass(frozen=True)
class ArrayBackend:
    """Where a batched run computes: ``name`` numpy or torch, ``device`` cpu, cuda, cuda:0, ..."""

    name: str = "numpy"
    device: str = "cpu"

    def __post_init__(self):
        check_backend(self.name, self.device)

    @property
    def is_numpy(self) -> bool:
        return self.name == "numpy"

    @property
    def device_type(self) -> str:
        """cpu or cuda."""
        if self.is_numpy:
            return "cpu"
        import torch

        return torch.device(self.device).type

    @property
    def xp(self):
        if self.is_numpy:
            return np
        import array_api_compat.torch as xp

        return xp

    def asarray(self, value, dtype=None):
        """``value`` (NumPy, host) on this backend's device (float64 unless ``dtype``); NumPy: unchanged."""
        if self.is_numpy:
            return value if dtype is None and isinstance(value, np.ndarray) else np.asarray(value, dtype=dtype)
        xp = self.xp
        if namespace_of(value) is xp:  # already a tensor: moved only if on another device
            return xp.asarray(value, dtype=dtype, device=self.device)
        value = np.asarray(value)
        if dtype is None:
            dtype = xp.bool if value.dtype == bool else xp.int64 if value.dtype.kind in "iu" else xp.float64
        return xp.asarray(value, dtype=dtype, device=self.device)

    def to_numpy(self, value):
        """A device array back on the host as a NumPy array (None stays None)."""
        if value is None or isinstance(value, np.ndarray):
            return value
        return value.detach().to("cpu").numpy()

    def run_streams(self, rngs, names) -> dict:
        """The named random streams of a batch of runs: per-run NumPy ``TrialStreams`` (numpy; run k is
        the run seeded by ``rngs[k]``), or one ``dpfed.device_random.BatchStreams`` per name drawing on the
        device (torch; see there for what a seed then reproduces)."""
        if self.is_numpy:
            from dpfed.trials import split_streams

            return dict(zip(names, split_streams(rngs, len(names)), strict=True))
        from dpfed.device_random import BatchStreams, call_seeds

        if len(rngs) == 0:
            raise ConfigurationError("trials", "a batch needs at least one trial seed")
        seeds = call_seeds(rngs, names)
        return {name: BatchStreams(len(rngs), seeds[name], self.device) for name in names}


def like(reference, value, dtype=None):
    """``value`` (host data) as an array of ``reference``'s backend and device; NumPy: ``np.asarray``."""
    xp = namespace_of(reference)
    if xp is np:
        return np.asarray(value, dtype=dtype)
    if namespace_of(value) is xp:  # already on the backend: no copy (stays where it is)
        return value if dtype is None else xp.astype(value, dtype, copy=False)
    value = np.asarray(value)
    if dtype is None:
        dtype = xp.bool if value.dtype == bool else xp.float64
    return xp.asarray(value, dtype=dtype, device=device_of(reference))


def float_dtype(xp, dtype):
    """The floating dtype of namespace ``xp`` named by ``dtype`` (a NumPy dtype, or already ``xp``'s)."""
    if xp is np or not isinstance(dtype, (type, np.dtype, str)):
        return dtype
    return getattr(xp, np.dtype(dtype).name)


@contextlib.contextmanager
def single_threaded(backend: ArrayBackend):
    """One CPU thread for BLAS (and for torch on a cpu): parallelism comes from the executors' workers."""
    from threadpoolctl import threadpool_limits

    torch_threads = None
    if backend.name == "torch" and backend.device_type == "cpu":
        import torch

        torch_threads = torch.get_num_threads()
        torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            yield
    finally:
        if torch_threads is not None:
            torch.set_num_threads(torch_threads)
