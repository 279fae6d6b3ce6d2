"""What an attack will do, decided before any trial runs: batches, reduction, pilot, memory.

Reductions (``reduction="auto"`` picks one):

- ``sorted``: every score is kept and sorted; thresholds are order statistics on a fixed rank grid
  (exact, no pilot). Chosen automatically up to ``SORTED_MAX_TRIALS`` trials per world, where it
  certifies at least as much as counts and its memory (about 24 bytes a trial and world) is small.
- ``counts``: each batch is reduced on the fly to counts over thresholds fixed by an independent pilot
  batch (``attacks.estimators.grid``); memory does not grow with the trials. Chosen above
  ``SORTED_MAX_TRIALS``. The pilot costs ``pilot_trials`` extra trials per world (``pilot_size``: 5%
  from 20 000 up to 2 000 000 at 4e7 trials, then growing as the square root of the budget up to
  ``PILOT_MAX``, so that at large budgets the thresholds are chosen from a pilot that resolves rates
  closer to 1 / budget instead of extrapolating further; it is still drawn, and the thresholds fixed,
  before any test trial). A pilot that would not fit in the memory share is cut to what fits (shown in
  the plan).

Memory is checked up front against the memory available now (``psutil``): a sorted run that cannot
fit, or a counts run whose batches cannot be made large enough to stay under ``MAX_BATCHES`` per world,
is refused with the largest number of trials that would fit. Beyond that the limit is time, which the
plan estimates once a first batch has been timed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from accounting.errors import ConfigurationError, require_number

REDUCTIONS = ("auto", "sorted", "counts")
SORTED_MAX_TRIALS = 1_000_000
SORTED_BYTES_PER_TRIAL = 24  # a score, its sorted copy and estimator temporaries (per world)
MAX_BATCHES = 100_000  # per world: bounds the task bookkeeping and the checkpoint's file count
MEMORY_SHARE = 0.5  # of the memory available at start, for all batches in flight together


def available_memory() -> int:
    """Bytes of memory available to this process now (psutil), at least 256 MiB."""
    try:
        import psutil

        return max(int(psutil.virtual_memory().available), 256 << 20)
    except Exception:  # noqa: BLE001 - no psutil information: assume a small machine
        return 2 << 30


PILOT_KNEE = 2_000_000  # pilot at 4e7 trials (5%), where growth turns to a square root
PILOT_MAX = 50_000_000  # about 2.4 GB of pilot scores for both worlds (SORTED_BYTES_PER_TRIAL)


def pilot_size(trials: int, memory_budget: float | None = None) -> int:
    """Pilot trials per world for a counts reduction of ``trials`` test trials: 5% (at least 20 000) up
    to ``PILOT_KNEE``, then ``PILOT_KNEE * sqrt(trials / 4e7)`` up to ``PILOT_MAX``; at most what fits in
    ``memory_budget`` bytes (both worlds' pilot scores held and sorted)."""
    linear = max(trials // 20, 20_000)
    grown = PILOT_KNEE * math.sqrt(trials / (20 * PILOT_KNEE)) if linear > PILOT_KNEE else linear
    size = min(grown, PILOT_MAX)
    if memory_budget is not None:
        size = min(size, max(20_000, memory_budget // (2 * SORTED_BYTES_PER_TRIAL)))
    return int(size)


@dataclass(frozen=True)
class RunPlan:
    """The shape of one attack: trials and batches per world, reduction, pilot, peak memory estimate."""

    trials: int
    batch_size: int
    batches: int
    reduction: str
    pilot_trials: int
    memory_bytes: int
    in_flight: int

    def describe(self, seconds: float | None = None) -> str:
        """One line; with ``seconds`` (an estimate of the time still needed) that estimate too."""
        text = (
            f"plan: {self.trials:.4g} trials per world in {self.batches} batches of {self.batch_size:.4g} "
            f"({self.reduction}"
            + (f", +{self.pilot_trials} pilot trials per world" if self.pilot_trials else "")
            + f"), about {self.memory_bytes / 2**20:.0f} MiB"
        )
        return text if seconds is None else f"{text}, about {_duration(seconds)} to go"


def _duration(seconds: float) -> str:
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def _reduction(reduction: str, trials: int, budget: float) -> str:
    """``auto`` resolved (sorted scores while they fit and the budget is small, else counts); sorted
    scores that cannot fit in ``budget`` bytes are a ConfigurationError saying how many would."""
    if reduction == "auto":
        fits = trials * 2 * SORTED_BYTES_PER_TRIAL <= budget
        reduction = "sorted" if trials <= SORTED_MAX_TRIALS and fits else "counts"
    if reduction == "sorted":
        most = int(budget / (2 * SORTED_BYTES_PER_TRIAL))
        if trials > most:
            raise ConfigurationError(
                "trials",
                f"sorted scores of {trials:.3g} trials per world need about "
                f"{trials * 2 * SORTED_BYTES_PER_TRIAL / 2**30:.1f} GiB; at most "
                f"{most:.3g} fit in memory here (use --reduction counts)",
            )
    return reduction


def plan_run(
    probe,
    trials: int,
    batch_size: int | None = None,
    reduction: str = "auto",
    workers: int = 1,
    memory: int | None = None,
    device_batch: int | None = None,
) -> RunPlan:
    """The plan of ``trials`` per world of ``probe`` on ``workers`` parallel batches, or a one-line
    ConfigurationError saying why it cannot run (and the largest number of trials that could).

    ``device_batch``: the batch a CUDA device's free memory allows (``attacks.backend.device_batch_size``);
    without a ``batch_size`` it replaces the probe's default (a CPU size), still capped by host memory."""
    if reduction not in REDUCTIONS:
        raise ConfigurationError("reduction", f"choose one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    memory = available_memory() if memory is None else int(memory)
    budget = MEMORY_SHARE * memory
    in_flight = max(1, int(workers))
    per_trial = max(1, int(getattr(probe, "memory_per_trial", 64)))
    if per_trial * in_flight > budget:
        raise ConfigurationError(
            "workers", f"{in_flight} parallel batches of even one trial need about "
            f"{per_trial * in_flight / 2**30:.1f} GiB of the {memory / 2**30:.1f} GiB available; use fewer workers"
        )
    largest_batch = max(1, int(budget / (per_trial * in_flight)))
    if batch_size is not None:
        batch_size = int(require_number("batch_size", batch_size, low=1, integer=True))
    reduction = _reduction(reduction, trials, budget)
    default = int(probe.batch_size) if device_batch is None else max(1, int(device_batch))
    size = batch_size or min(default, largest_batch)
    if batch_size is None and reduction == "counts" and -(-trials // size) > MAX_BATCHES:
        size = -(-trials // MAX_BATCHES)
    if size > largest_batch:
        most = MAX_BATCHES * largest_batch if batch_size is None else None
        limit = f"; at most {most:.3g} trials per world fit" if most else ""
        raise ConfigurationError(
            "trials" if batch_size is None else "batch_size",
            f"batches of {size:.3g} trials need about "
            f"{size * per_trial * in_flight / 2**30:.1f} GiB of the "
            f"{memory / 2**30:.1f} GiB available{limit}",
        )
    batches = -(-trials // size)
    if reduction == "counts" and batches > MAX_BATCHES:
        raise ConfigurationError(
            "batch_size", f"{batches} batches per world exceed the limit of {MAX_BATCHES}; use a larger --batch-size"
        )
    pilot = pilot_size(trials, budget / 2) if reduction == "counts" else 0
    peak = size * per_trial * in_flight + (
        2 * trials * SORTED_BYTES_PER_TRIAL if reduction == "sorted" else 2 * pilot * SORTED_BYTES_PER_TRIAL
    )
    return RunPlan(int(trials), int(size), int(batches), reduction, pilot, int(peak), in_flight)


def check_trial_count(trials) -> int:
    """A number of trials per world: a whole number >= 1 given as an int, a float or a string such as
    "1e7" (ConfigurationError otherwise)."""
    return check_whole_number(trials, "trials")


def check_whole_number(given, field: str) -> int:
    """A whole number >= 1 given as an int, a float or a string such as "1e8" or "100_000", for
    ``--trials`` and ``--batch-size`` alike (ConfigurationError naming ``field`` otherwise)."""
    value = given
    if isinstance(value, str):
        try:
            value = float(value.replace("_", ""))
        except ValueError:
            raise ConfigurationError(field, f"expected a whole number such as 1e7, got {given!r}") from None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value != math.floor(value)
        or value < 1
    ):
        raise ConfigurationError(field, f"expected a whole number >= 1 such as 100000 or 1e7, got {given!r}")
    return int(value)
