"""Opacus's PRV accountant (Gopi, Lee, Wutschitz 2021) as an independent cross-check of the PLD.

Covers Poisson-subsampled (or un-subsampled) Gaussian mechanisms under add/remove. The reported
epsilon is the PRV upper estimate; ``eps_error`` bounds its distance from the true value. Opacus's
grid shrinks like eps_error / sqrt(steps), so its cost grows without bound in the number of steps;
beyond 10^4 steps we widen ``eps_error`` by sqrt(steps / 10^4) (reported in the details), which keeps
the cost flat. (Un-subsampled releases are NOT collapsed into one Gaussian here as they are for the
PLD: opacus's PRV fails on one release with a large mu.) A ``time_limit`` stops the worker when it
runs out (``accounting.cost``: the budget of a run that did not insist; the worker's start, importing
opacus, is not counted). opacus runs in one spawned
worker process, where its memory cap (RLIMIT_AS) and its warning filters live, so this process's state
is never touched and threads may call it concurrently.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import resource
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

from accounting import peers
from accounting.base import Unsupported
from accounting.mechanisms import Composition, Gaussian, Neighbouring, Sampling, SubsampledGaussian


def _history(composition: Composition) -> list[tuple[float, float, int]]:
    """Opacus's (noise multiplier, sampling rate, steps) history; its multipliers are relative to the
    L2 sensitivity (add/remove), so an un-subsampled replace-one release enters with z / 2."""
    relation = peers.composition_relation(composition)
    history = []
    for mechanism, count in composition.parts:
        if not isinstance(mechanism, (Gaussian, SubsampledGaussian)):
            raise Unsupported(f"opacus's PRV accountant has no {type(mechanism).__name__}")
        if peers.is_unsampled(mechanism):
            rate = 1.0
        elif mechanism.sampling is Sampling.POISSON and relation is Neighbouring.ADD_REMOVE:
            rate = float(mechanism.rate)
        else:
            raise Unsupported("opacus's PRV accountant covers Poisson sampling under add/remove only")
        history.append((peers.peer_noise_multiplier(mechanism, relation, peers.PeerScale.SENSITIVITY), rate, count))
    return history


MEMORY_CAP_BYTES = 4 * 2**30


def _address_space_in_use() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


@contextlib.contextmanager
def memory_cap(extra_bytes: int = MEMORY_CAP_BYTES):
    """Let the block allocate at most ``extra_bytes`` more address space; beyond, MemoryError.

    Opacus sizes its PRV grid from the noise and the number of steps; for small noise multipliers it
    asks for tens of GB, which would otherwise get the whole process killed by the kernel.
    """
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = _address_space_in_use() + extra_bytes
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (OSError, ValueError):  # no /proc or no rlimit support: run uncapped
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _quiet_worker() -> None:
    """Initialiser of the PRV worker process: opacus's warnings are silenced there, not here."""
    import warnings

    warnings.filterwarnings("ignore", module="opacus")


def _worker_epsilon(history, delta: float, eps_error: float, cap_bytes: int) -> float | None:
    """Runs in the worker process: opacus's PRV epsilon under its own address-space cap (None when
    the grid does not fit)."""
    from opacus.accountants import PRVAccountant

    accountant = PRVAccountant()
    accountant.history = history
    try:
        with memory_cap(cap_bytes):
            return float(accountant.get_epsilon(delta, eps_error=eps_error))
    except MemoryError:
        return None
    except ValueError as exc:
        if "Maximum allowed size" in str(exc):  # numpy refuses the grid before allocating it
            return None
        raise


_WORKER = None
_WORKER_LOCK = threading.Lock()


def _worker():
    """One spawned process for opacus's PRV, shared by all threads: its memory cap and warning
    filters are that process's own, so nothing of this process changes."""
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None:
            _WORKER = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=_quiet_worker)
        return _WORKER


def _stop_worker() -> None:
    """End the worker process (after a time limit ran out); the next call starts a fresh one."""
    global _WORKER
    with _WORKER_LOCK:
        pool, _WORKER = _WORKER, None
    if pool is not None:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)


def _warm() -> bool:
    """Runs in the worker: import opacus (the worker's start-up cost, seconds on a loaded machine)."""
    import opacus.accountants  # noqa: F401

    return True


def _run_in_worker(*args, time_limit: float | None = None) -> float | None:
    global _WORKER
    try:
        worker = _worker()
        if time_limit is not None:  # the limit is for the computation, not for starting the worker
            worker.submit(_warm).result()
        return worker.submit(_worker_epsilon, *args).result(timeout=time_limit)
    except FutureTimeout:
        _stop_worker()
        raise Unsupported(
            f"skipped after {time_limit:.0f} s (opacus's PRV grid for this configuration); `--accountants prv` insists"
        ) from None
    except BrokenProcessPool:
        with _WORKER_LOCK:
            _WORKER = None
        raise Unsupported("opacus's PRV worker process died (out of memory?)") from None


class PrvAccountant:
    """opacus's PRV accountant, run in a worker process with its own memory cap (thread-safe)."""

    name = "prv"

    def __init__(self, eps_error: float = 0.01, time_limit: float | None = None):
        self.eps_error = eps_error
        self.time_limit = time_limit  # seconds before the worker is stopped (None: no limit)
        self.last_details: dict = {}

    def error_for(self, composition: Composition) -> float:
        return self.eps_error * max(1.0, (composition.total_count / 1e4) ** 0.5)

    def epsilon(self, composition: Composition, delta: float) -> float:
        # A negative upper estimate (the true value is 0 within eps_error) still certifies 0.
        eps_error = self.error_for(composition)
        self.last_details = {"eps_error": eps_error}
        history = _history(composition)
        value = _run_in_worker(history, float(delta), eps_error, MEMORY_CAP_BYTES, time_limit=self.time_limit)
        if value is None:
            raise Unsupported(
                f"opacus's PRV grid needs more than {MEMORY_CAP_BYTES // 2**30} GB here (small noise or many steps)"
            )
        return max(value, 0.0)

    def delta(self, composition: Composition, epsilon: float) -> float:
        raise Unsupported("opacus's PRV accountant answers epsilon for a delta only")
