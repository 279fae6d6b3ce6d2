"""Refuse, before any work, DUETS / DisKernelUCB / FKM run sizes whose memory cannot fit (issue 21).

Each estimate is the dominant arrays of the code, in bytes (float64 / int64: 8 bytes a number), an upper
estimate rather than a measurement: one run's peak plus what every finished run keeps. A size that does
not fit is refused with the largest value of that field that fits (the other fields as given), found by
bisection on the estimate; the message has the form of ``common.check_memory``.

DUETS: the candidate kernel (and its distances) ``3 C^2``; per epoch the posterior variance over the
active set, ``(N T_j)^2 + N T_j C``, and the features ``N T_j r`` (r <= min(N T_j, C)); each finished run
keeps its curves, epoch logs and transcript: ``200 N T + 4 C`` numbers (measured with tracemalloc: 0.50,
2.2 and 2.3 MB per DUETS run at N T = 500, 4000 and 2000 with C = 2000; 0.52, 3.9, 3.0 MB for DP-DUETS).
DisKernelUCB: every agent's and the synchronised posterior rows, ``(N + 1) N T C``, plus the kernel
(measured peaks 90 MB, 0.72 GB and 1.3 GB at (N, T) = (10, 50), (10, 400), (40, 50)); a run keeps its
curves, ``4 N T + 2 T``.
FKM: the loss parameters ``T d`` (or ``records d``), a chunk of directions ``512 runs d``, the curves
``4 T runs`` and, if saved, the transcript ``T runs (d + 1)``.
"""

from __future__ import annotations

from accounting.errors import ConfigurationError
from reports.commands.common import available_memory

WORD = 8.0
CHUNK = 512


def refuse_unless_fits(sizes: dict, need, what: dict | None = None, usual: dict | None = None) -> None:
    """``need(**sizes)`` bytes must fit in the memory available now. Else ConfigurationError naming a
    field of ``sizes`` that, reduced alone, makes the run fit, with the largest value of it that fits
    (found by bisection; ``need`` increasing in every field): of those fields, the one furthest above that
    largest value, or with ``usual`` (each field's default) the one furthest above its default
    (``--clients 1e9`` then names clients, not the horizon that alone would fit at 1). If no single field
    suffices, the field that reduced alone saves most memory."""
    available = float(available_memory())
    total = need(**sizes)
    if total <= available:
        return

    def largest_fitting(field):
        low, high = 0, int(sizes[field])  # need(low) fits or low = 0; need(high) does not
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if need(**{**sizes, field: middle}) <= available else (low, middle)
        return low

    at_one = {field: need(**{**sizes, field: 1}) for field, value in sizes.items() if value > 1}
    fits = {field: largest_fitting(field) for field, smallest in at_one.items() if smallest <= available}
    if fits:
        above = (lambda f: float(sizes[f]) / usual[f]) if usual else (lambda f: float(sizes[f]) / fits[f])
        field = max(fits, key=above)
        low = fits[field]
    else:
        field = min(at_one, key=at_one.get, default=next(iter(sizes)))
        low = largest_fitting(field)
    largest = f"at most about {low:.3g} fits" if low else "no value fits with the other sizes as given"
    raise ConfigurationError(
        field,
        f"{sizes[field]:g}{(what or {}).get(field, '')} needs about {total / 2**30:.3g} GiB of memory, more than "
        f"the {available / 2**30:.3g} GiB available; {largest}",
    )


def _duets_bytes(algorithm: str, agents: int, horizon: int, candidates: int, dim: int, runs: int) -> float:
    n, t, c = float(agents), float(horizon), float(candidates)
    kernel = 3 * c * c + c * dim
    if algorithm == "diskernelucb":
        return WORD * (kernel + (n + 1) * n * t * c + 2 * n * t + runs * (4 * n * t + 2 * t))
    peak = (n * t) ** 2 + n * t * c + n * t * min(n * t, c)
    return WORD * (kernel + peak + runs * (200 * n * t + 4 * c))


def check_duets_sizes(algorithm: str, config, runs: int) -> None:
    """Refuse a DUETS / DP-DUETS / DisKernelUCB run whose horizon, agents, candidates or runs cannot fit."""
    dim = config.dim if config.objective.startswith("sphere") else 4

    def need(horizon, num_agents, candidates, runs):
        return _duets_bytes(algorithm, num_agents, horizon, candidates, dim, runs)

    sizes = {"horizon": config.horizon, "num_agents": config.num_agents, "candidates": config.candidates}
    refuse_unless_fits({**sizes, "runs": runs}, need, {"runs": " runs", "horizon": " steps"})


def _fkm_bytes(dim: int, horizon: int, runs: int, records: int, transcript: bool) -> float:
    d, t, r = float(dim), float(horizon), float(runs)
    total = t * d + records * d + 2 * CHUNK * r * d + 4 * t * r + 4 * r * d + 2 * r * records
    return WORD * (total + (t * r * (d + 1) if transcript else 0.0))


def check_fkm_sizes(config, runs: int, transcript: bool, records: int = 0) -> None:
    """Refuse an FKM / DP-FKM run whose horizon, runs, dimension or records cannot fit."""
    sizes = {"horizon": config.horizon, "runs": runs, "dim": config.dim, "records": records}
    refuse_unless_fits(sizes, lambda **s: _fkm_bytes(**s, transcript=transcript), {"runs": " runs"})
