"""Splitting an attack into seeded batches, and running one batch.

Trials of each world are cut into batches of ``batch_size`` (the last one shorter). Batch ``i`` of
world ``w`` draws its randomness from ``SeedSequence(seed).spawn(3)[w].spawn(i + 1)[i]`` (stream 2 is
reserved for training a learned score), so its scores depend only on (seed, world, i, size): the same
seed gives the same scores whatever executor runs the batches, in whatever order, on however many
workers. Batch seeds do not depend on the total number of batches either.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError

TRAINING_STREAM = 2
PILOT_STREAM = 4  # the independent batch that fixes the thresholds of a counts reduction


class BatchFailed(RuntimeError):
    """A batch could not be computed for a reason outside the probe's control (a worker process died,
    a cluster lost its worker): the attack has no result and must say so."""


@dataclass(frozen=True)
class BatchTask:
    """One unit of work: ``size`` trials of ``world``, batch number ``index``, seeded by ``seed``."""

    world: int
    index: int
    size: int
    seed: np.random.SeedSequence

    @property
    def key(self) -> str:
        return f"world{self.world}-batch{self.index:06d}"


def root_seed(seed) -> np.random.SeedSequence:
    """The root SeedSequence for an integer seed (or fresh entropy for None)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ConfigurationError("seed", f"must be a non-negative whole number, got {seed!r}")
    return np.random.SeedSequence(seed)


def stream(seed, index: int) -> np.random.SeedSequence:
    """Child ``index`` of the root sequence (0, 1: the worlds; 2: training)."""
    root = root_seed(seed)
    return np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key + (index,))


def iter_batches(trials: int, batch_size: int, seed, worlds=(0, 1), parents=None) -> Iterator[BatchTask]:
    """The batches of both worlds, world 0 first, built one at a time (never all in memory).

    ``parents`` replaces the worlds' streams (the pilot batch uses its own)."""
    trials, batch_size = int(trials), max(1, int(batch_size))
    for world in worlds:
        parent = stream(seed, world) if parents is None else parents[world]
        for index in range(-(-trials // batch_size)):
            size = min(batch_size, trials - index * batch_size)
            child = np.random.SeedSequence(parent.entropy, spawn_key=parent.spawn_key + (index,))
            yield BatchTask(world, index, size, child)


def plan_batches(trials: int, batch_size: int, seed) -> list[BatchTask]:
    """All batches of both worlds, world 0 first."""
    return list(iter_batches(trials, batch_size, seed))


def pilot_batches(trials: int, batch_size: int, seed) -> list[BatchTask]:
    """The pilot's batches: ``trials`` per world from the pilot stream (independent of the test trials)."""
    pilot = stream(seed, PILOT_STREAM)
    parents = [np.random.SeedSequence(pilot.entropy, spawn_key=pilot.spawn_key + (w,)) for w in (0, 1)]
    return list(iter_batches(trials, batch_size, seed, parents=parents))


def run_task(probe, task: BatchTask, reduce=None) -> np.ndarray:
    """Scores of one batch, checked to be ``size`` finite numbers, as a NumPy array; ``reduce(scores)``
    of them if given (a counts reduction runs where the batch runs, on the probe's device, so only the
    counts travel)."""
    from attacks.backend import to_numpy

    scores = batch_scores(probe, task)
    return to_numpy(scores) if reduce is None else reduce(scores)


def batch_scores(probe, task: BatchTask):
    """The checked scores of one batch on the probe's backend, drawn from the batch's own stream."""
    from accounting.mechanisms import array_namespace
    from attacks.backend import batch_generator

    rng = batch_generator(probe, task.seed)
    raw = probe.scores(task.world, task.size, rng)
    xp = array_namespace(None, raw)
    try:
        scores = xp.reshape(xp.asarray(raw, dtype=xp.float64), (-1,))
    except (TypeError, ValueError, RuntimeError):
        raise ConfigurationError("probe", f"{probe.name!r} returned non-numeric scores") from None
    if tuple(scores.shape) != (task.size,):
        raise ConfigurationError("probe", f"{probe.name!r} returned {scores.shape[0]} scores for {task.size} trials")
    if not bool(xp.all(xp.isfinite(scores))):
        raise ConfigurationError("probe", f"{probe.name!r} returned non-finite scores")
    return scores
