"""What a data loader really does over one epoch: its sampler, length, realised batch sizes, and the
scheme its batches are drawn by (Poisson, shuffled, sequential, with replacement, or unknown).

The batch sampler is iterated for one epoch (index lists only; no data is loaded), so the facts are
what runs, not what the loader's arguments suggest. Schemes:

- ``poisson``: opacus's ``UniformWithReplacementSampler`` (``DPDataLoader``): every record joins each
  batch independently with the sampler's ``sample_rate``; the number of batches is the sampler's
  ``steps``.
- ``shuffled`` / ``sequential``: a ``BatchSampler`` over a ``RandomSampler`` without replacement or a
  ``SequentialSampler``: each record in exactly one batch per epoch, fixed batch size.
- ``with-replacement``: a ``BatchSampler`` over a ``RandomSampler(replacement=True)`` or a
  ``WeightedRandomSampler``: each batch is ``batch_size`` draws with replacement, record ``i`` drawn
  with probability ``p_i`` each draw (``p_i`` from the weights), so a record can repeat in a batch.

opacus's ``BatchMemoryManager`` wraps the batch sampler in a ``BatchSplittingSampler`` that splits each
logical batch into physical ones and tells the optimizer, per physical batch, whether to skip its step.
The facts are then about the logical batches (one optimizer step each, what the accountant counts): the
splitter is iterated with a stand-in that records its skip signals in place of the user's optimizer (so
the user's optimizer is left as it was), and the physical batches are regrouped by those signals.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

from accounting.errors import ConfigurationError

SCHEMES = ("poisson", "shuffled", "sequential", "with-replacement", "unknown")


@dataclass(frozen=True)
class SamplerFacts:
    """Facts about one epoch of a data loader.

    population : records in the dataset (``len(dataset)``).
    loader_length : ``len(data_loader)`` (what opacus derives its sample rate from: 1 / length; under a
        ``BatchMemoryManager`` the length of the loader it wraps, whose batches are the logical ones).
    batches_per_epoch, batch_sizes : realised over one iterated epoch.
    worst_inclusion_rate : the largest probability that one record is in one batch (the rate an
        accountant needs for the most exposed record); for ``shuffled``/``sequential`` the fraction
        batch size / population.
    draws_per_batch, max_draw_probability : for ``with-replacement`` (draws B, largest p_i).
    once_per_epoch : every record appeared exactly once in the iterated epoch.
    max_multiplicity : the most times one record appeared in one batch.
    splitter_class, physical_batches_per_epoch, max_physical_batch_size : a ``BatchMemoryManager``'s
        splitting sampler (None without one); the other fields are then about the logical batches.
    """

    loader_class: str
    batch_sampler_class: str
    sampler_class: str
    scheme: str
    population: int
    loader_length: int
    batches_per_epoch: int
    batch_sizes: tuple
    worst_inclusion_rate: float
    poisson_rate: float | None = None
    draws_per_batch: int | None = None
    max_draw_probability: float | None = None
    once_per_epoch: bool = False
    max_multiplicity: int = 1
    splitter_class: str | None = None
    physical_batches_per_epoch: int | None = None
    max_physical_batch_size: int | None = None

    @property
    def mean_batch_size(self) -> float:
        return sum(self.batch_sizes) / max(len(self.batch_sizes), 1)

    @property
    def fixed_batch_size(self) -> int:
        """The largest realised batch size (the batch size of a fixed-size scheme)."""
        return max(self.batch_sizes) if self.batch_sizes else 0

    def to_dict(self) -> dict:
        out = asdict(self)
        out["batch_sizes"] = list(self.batch_sizes)
        out["mean_batch_size"] = self.mean_batch_size
        return out


def _epoch_batches(batch_sampler) -> list[list[int]]:
    try:
        return [list(map(int, batch)) for batch in batch_sampler]
    except Exception as exc:  # noqa: BLE001 - the user's sampler: a failure is a bad set-up, said in one line
        raise ConfigurationError("data_loader", f"iterating its batch sampler ({type(batch_sampler).__name__}) "
                                 f"failed: {type(exc).__name__}: {exc}") from None


class _SkipRecorder:
    """Stands in for the optimizer of a ``BatchSplittingSampler`` while it is iterated: records its signals."""

    def __init__(self):
        self.signals = []

    def signal_skip_step(self, do_skip=True):
        self.signals.append(bool(do_skip))


def _logical_batches(splitter) -> tuple[list[list[int]], int]:
    """Iterate a ``BatchSplittingSampler`` for one epoch without touching the user's optimizer; return the
    logical batches (physical ones joined up to each signal not to skip) and the number of physical ones."""
    recorder = _SkipRecorder()
    optimizer = splitter.optimizer
    splitter.optimizer = recorder
    try:
        physical = _epoch_batches(splitter)
    finally:
        splitter.optimizer = optimizer
    if len(recorder.signals) != len(physical):
        raise ConfigurationError("data_loader", f"its {type(splitter).__name__} signalled {len(recorder.signals)} "
                                 f"skips for {len(physical)} batches: cannot tell its logical batches")
    logical, current = [], []
    for batch, skip in zip(physical, recorder.signals, strict=True):
        current += batch
        if not skip:
            logical.append(current)
            current = []
    if current:
        raise ConfigurationError("data_loader", f"its {type(splitter).__name__} ends an epoch inside a logical "
                                 "batch (the last physical batch asks the optimizer to skip its step)")
    return logical, len(physical)


def splitting_sampler(data_loader):
    """The ``BatchSplittingSampler`` a ``BatchMemoryManager`` put in ``data_loader`` (None if none)."""
    from opacus.utils.batch_memory_manager import BatchSplittingSampler

    batch_sampler = getattr(data_loader, "batch_sampler", None)
    return batch_sampler if isinstance(batch_sampler, BatchSplittingSampler) else None


def _scheme(batch_sampler, sampler) -> str:
    from opacus.utils.uniform_sampler import UniformWithReplacementSampler
    from torch.utils.data import BatchSampler, RandomSampler, SequentialSampler, WeightedRandomSampler

    if isinstance(batch_sampler, UniformWithReplacementSampler):
        return "poisson"
    if not isinstance(batch_sampler, BatchSampler):
        return "unknown"
    if isinstance(sampler, WeightedRandomSampler):
        return "with-replacement" if sampler.replacement else "unknown"
    if isinstance(sampler, RandomSampler):
        return "with-replacement" if sampler.replacement else "shuffled"
    if isinstance(sampler, SequentialSampler):
        return "sequential"
    return "unknown"


def _max_draw_probability(sampler, population: int) -> float:
    from torch.utils.data import WeightedRandomSampler

    if isinstance(sampler, WeightedRandomSampler):
        weights = sampler.weights.double()
        return float(weights.max() / weights.sum())
    return 1.0 / population


def read_loader(data_loader, optimizer=None) -> SamplerFacts:
    """Iterate one epoch of ``data_loader``'s batch sampler and describe what it does (about logical batches
    under a ``BatchMemoryManager``, whose splitter must signal ``optimizer`` when one is given)."""
    batch_sampler = getattr(data_loader, "batch_sampler", None)
    if batch_sampler is None:
        raise ConfigurationError("data_loader", "the data loader does not batch (batch_size=None): not a DP-SGD "
                                 "data loader")
    splitter = splitting_sampler(data_loader)
    if splitter is not None:
        if optimizer is not None and splitter.optimizer is not optimizer:
            raise ConfigurationError("data_loader", "its BatchMemoryManager was given another optimizer than the "
                                     "one returned with it: the private optimizer would step on every physical "
                                     "batch (give BatchMemoryManager the optimizer make_private returned)")
        batch_sampler = splitter.sampler
    try:
        population = len(data_loader.dataset)
        loader_length = len(batch_sampler)
    except TypeError:
        raise ConfigurationError("data_loader", "the dataset has no length (an IterableDataset): opacus cannot "
                                 "sample it") from None
    sampler = getattr(batch_sampler, "sampler", None)
    scheme = _scheme(batch_sampler, sampler)
    physical = None
    if splitter is not None:
        batches, physical = _logical_batches(splitter)
    else:
        batches = _epoch_batches(batch_sampler)
    if not batches:
        raise ConfigurationError("data_loader", "the data loader yields no batch in an epoch")
    counts = Counter(i for batch in batches for i in batch)
    once = len(counts) == population and set(counts.values()) == {1}
    multiplicity = max((max(Counter(b).values()) for b in batches if b), default=1)
    sizes = tuple(len(b) for b in batches)
    poisson_rate = draws = p_max = None
    if scheme == "poisson":
        poisson_rate = float(batch_sampler.sample_rate)
        worst = poisson_rate
    elif scheme == "with-replacement":
        draws = int(batch_sampler.batch_size)
        p_max = _max_draw_probability(sampler, population)
        worst = 1.0 - (1.0 - p_max) ** draws
    else:
        worst = max(sizes) / population
    return SamplerFacts(type(data_loader).__name__, type(batch_sampler).__name__,
                        type(sampler).__name__ if sampler is not None else "-", scheme, population, loader_length,
                        len(batches), sizes, float(worst), poisson_rate, draws, p_max, once, int(multiplicity),
                        type(splitter).__name__ if splitter is not None else None, physical,
                        int(splitter.max_batch_size) if splitter is not None else None)
