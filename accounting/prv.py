"""Opacus's PRV accountant (Gopi, Lee, Wutschitz 2021) as an independent cross-check of the PLD.

Covers Poisson-subsampled (or un-subsampled) Gaussian mechanisms under add/remove. The reported
epsilon is the PRV upper estimate; ``eps_error`` bounds its distance from the true value. Opacus's
grid shrinks like eps_error / sqrt(steps), so its cost grows without bound in the number of steps;
beyond 10^4 steps we widen ``eps_error`` by sqrt(steps / 10^4) (reported in the details), which keeps
the cost flat.
"""

from __future__ import annotations

import contextlib
import resource

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


class PrvAccountant:
    name = "prv"

    def __init__(self, eps_error: float = 0.01):
        self.eps_error = eps_error
        self.last_details: dict = {}

    def error_for(self, composition: Composition) -> float:
        return self.eps_error * max(1.0, (composition.total_count / 1e4) ** 0.5)

    def _accountant(self, composition: Composition):
        import warnings

        from opacus.accountants import PRVAccountant

        accountant = PRVAccountant()
        accountant.history = _history(composition)
        warnings.filterwarnings("ignore", module="opacus")
        return accountant

    def epsilon(self, composition: Composition, delta: float) -> float:
        # A negative upper estimate (the true value is 0 within eps_error) still certifies 0.
        eps_error = self.error_for(composition)
        self.last_details = {"eps_error": eps_error}
        accountant = self._accountant(composition)
        try:
            with memory_cap():
                value = accountant.get_epsilon(delta, eps_error=eps_error)
        except MemoryError:
            raise Unsupported(f"opacus's PRV grid needs more than {MEMORY_CAP_BYTES // 2**30} GB here "
                              "(small noise or many steps)") from None
        return max(float(value), 0.0)

    def delta(self, composition: Composition, epsilon: float) -> float:
        raise Unsupported("opacus's PRV accountant answers epsilon for a delta only")
