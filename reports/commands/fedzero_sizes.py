"""Sizes a ``dpaudit run fedzero|dp-fedzero`` can hold, checked before any work.

The memory model (bytes, float64) follows ``dpfed.fedzero.algorithm.run_fedzero``: the contexts
(``workers x records x dim``, with generation temporaries), the per-round regret of every run
(``rounds x runs``) and the per-round summary the outputs keep, the transcript when it is saved
(``--save-transcript``: every iterate and every worker's upload), and the working arrays of one chunk of
rounds (directions, iterates, and the losses at every run, worker and evaluated record). Numbers that
cannot fit are refused with the field to shrink and the largest value of it that fits with the others.
"""

from __future__ import annotations

from accounting.errors import ConfigurationError
from reports.commands.common import available_memory

FIELDS = ("rounds", "runs", "records", "clients", "dim")  # clients: `run fedzero --clients`, its workers
CHUNK = 256  # rounds per chunk (dpfed.fedzero.algorithm.CHUNK)


def fedzero_bytes(rounds, runs, records, clients, dim, transcript=False, all_records=False) -> float:
    """Estimated peak memory of a FedZero run of these sizes (see the module docstring)."""
    rounds, runs, records, workers, dim = (float(v) for v in (rounds, runs, records, clients, dim))
    contexts = 24.0 * workers * records * dim
    per_round = 8.0 * runs + 200.0
    if transcript:
        per_round += 8.0 * runs * (dim + workers) + 400.0 * (1.0 + workers)
    evaluated = records if all_records else 1.0
    chunk = min(rounds, CHUNK)
    working = 8.0 * (3.0 * chunk * runs * workers * dim + chunk * runs * dim + 4.0 * runs * workers * evaluated * dim)
    return contexts + rounds * per_round + working


def _largest(sizes: dict, field: str, available: float, options: dict) -> int:
    """The largest value of ``field`` that fits with the other sizes held (0 if none)."""

    def fits(value):
        return fedzero_bytes(**{**sizes, field: value}, **options) <= available

    if not fits(1):
        return 0
    low, high = 1, 2
    while fits(high):
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low


def check_fedzero_sizes(sizes: dict, transcript: bool = False, all_records: bool = False) -> None:
    """Refuse (ConfigurationError naming the field and the largest value that fits) sizes whose estimated
    memory exceeds the memory available now; ``sizes`` maps ``FIELDS`` to numbers."""
    options = {"transcript": transcript, "all_records": all_records}
    available = float(available_memory())
    need = fedzero_bytes(**sizes, **options)
    if need <= available:
        return
    fits = {f: _largest(sizes, f, available, options) for f in FIELDS}
    candidates = [f for f in FIELDS if fits[f] >= 1]
    field = max(candidates, key=lambda f: float(sizes[f]) / fits[f]) if candidates else "rounds"
    raise ConfigurationError(
        field,
        f"{float(sizes[field]):g} {field} need about {need / 2**30:.3g} GiB of memory, more than the "
        f"{available / 2**30:.3g} GiB available; at most about {fits[field]:.3g} fit with the other sizes",
    )
