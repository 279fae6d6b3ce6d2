"""Array backends of the batched algorithms: NumPy (the default) or PyTorch tensors on a CPU or CUDA device.

The algorithms' arithmetic is written once against an array namespace ``xp``: NumPy itself (so the NumPy
path stays bit for bit what it was) or ``array_api_compat.torch``; ``namespace_of`` and ``device_of``
read both off an existing array. Randomness stays where it was: every run keeps its own NumPy
``TrialStreams`` (``dpfed.trials``), and ``DeviceStreams`` moves each draw to the device. So one seed
is one run on every backend (the transcripts agree up to the order of floating-point sums); on a GPU
the host generator and the host-to-device copies are a cost (``DeviceStreams.seconds`` measures it).
"""

from __future__ import annotations

import contextlib
import time
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
        value = np.asarray(value)
        if dtype is None:
            dtype = xp.bool if value.dtype == bool else xp.int64 if value.dtype.kind in "iu" else xp.float64
        return xp.asarray(value, dtype=dtype, device=self.device)

    def to_numpy(self, value):
        """A device array back on the host as a NumPy array (None stays None)."""
        if value is None or isinstance(value, np.ndarray):
            return value
        return value.detach().to("cpu").numpy()

    def streams(self, streams):
        """``streams`` (a ``TrialStreams``) drawing onto this backend's device; NumPy: the same object."""
        return streams if self.is_numpy else DeviceStreams(streams, self)


class DeviceStreams:
    """A ``TrialStreams`` whose draws (made on the host, per trial) arrive as float64 device arrays.

    Has the ``xp``/``device`` of a backend generator, so ``accounting.mechanisms`` releases run on the
    device; ``seconds`` accumulates the wall time spent drawing on the host and copying.
    """

    def __init__(self, streams, backend: ArrayBackend):
        self.host, self.backend = streams, backend
        self.xp, self.device = backend.xp, backend.device
        self.seconds = 0.0

    @property
    def generators(self):
        return self.host.generators

    def __len__(self) -> int:
        return len(self.host)

    def subset(self, trials) -> DeviceStreams:
        """The streams of the selected trials (a boolean mask or indices, host or device)."""
        subset = DeviceStreams(self.host.subset(self.backend.to_numpy(trials)), self.backend)
        subset.seconds = 0.0
        return subset

    def _draw(self, method: str, *args, **kwargs):
        start = time.perf_counter()
        out = self.backend.asarray(getattr(self.host, method)(*args, **kwargs))
        self.seconds += time.perf_counter() - start
        return out

    def random(self, *args, **kwargs):
        return self._draw("random", *args, **kwargs)

    def standard_normal(self, *args, **kwargs):
        return self._draw("standard_normal", *args, **kwargs)

    def normal(self, *args, **kwargs):
        return self._draw("normal", *args, **kwargs)

    def uniform(self, *args, **kwargs):
        return self._draw("uniform", *args, **kwargs)


def like(reference, value, dtype=None):
    """``value`` (host data) as an array of ``reference``'s backend and device; NumPy: ``np.asarray``."""
    xp = namespace_of(reference)
    if xp is np:
        return np.asarray(value, dtype=dtype)
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
