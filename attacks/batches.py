"""The batches of an attack through an executor, resumed from and saved to a checkpoint.

``collect_scores`` keeps every score (the sorted reduction); ``collect_counts`` first fixes a threshold
grid on a pilot batch (its own random stream), then has every test batch reduced to counts where it
runs, so memory stays constant in the number of trials. Totals do not depend on the order in which
batches finish: counts are integers and the score moments are summed exactly (Shewchuk's algorithm).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from attacks.backend import pilot_device
from attacks.estimators.grid import MOMENTS, ThresholdGrid, pilot_grid
from attacks.executors import get_executor, iter_batches, pilot_batches, root_seed


class ExactSum:
    """An exactly rounded running sum of floats (order-independent), as in ``math.fsum``."""

    def __init__(self):
        self.partials: list[float] = []

    def add(self, x: float) -> None:
        i = 0
        for y in self.partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                self.partials[i] = lo
                i += 1
            x = hi
        self.partials[i:] = [x]

    def value(self) -> float:
        return math.fsum(self.partials)


class CountsTotal:
    """Running counts of one world over a grid: histogram, trials, exact sums, extremes."""

    def __init__(self, grid: ThresholdGrid):
        self.hist = np.zeros(grid.edges.size + 1)
        self.n = 0.0
        self.sums = (ExactSum(), ExactSum())
        self.low, self.high = math.inf, -math.inf

    def add(self, counts: np.ndarray) -> None:
        g = self.hist.size
        self.hist += counts[:g]
        n, total, squares, low, high = counts[g : g + MOMENTS]
        self.n += n
        self.sums[0].add(float(total))
        self.sums[1].add(float(squares))
        self.low, self.high = min(self.low, low), max(self.high, high)

    def vector(self) -> np.ndarray:
        moments = [self.n, self.sums[0].value(), self.sums[1].value(), self.low, self.high]
        return np.concatenate([self.hist, moments])


def _run(
    probe,
    tasks,
    runner,
    *,
    store,
    checkpoint=None,
    reduce=None,
    progress=False,
    log=None,
    label="",
    plan=None,
    size=None,
) -> dict:
    """Feed stored batches to ``store`` and compute the others on ``runner``; returns the bookkeeping.
    ``size`` is the length of a stored result (default: the batch's trials)."""
    tasks = list(tasks) if checkpoint is not None or progress else tasks
    resumed, todo = 0, tasks
    if checkpoint is not None:
        todo = []
        for task in tasks:
            stored = checkpoint.load(task, size)
            if stored is None:
                todo.append(task)
            else:
                store(task, stored)
                resumed += 1
    from tqdm import tqdm

    total = len(tasks) if isinstance(tasks, list) else None
    clock = _Clock(plan, log)
    with tqdm(
        total=total, initial=resumed, unit="batch", desc=label, file=sys.stderr, disable=not progress, leave=False
    ) as bar:
        results = runner.run(probe, todo) if reduce is None else runner.run(probe, todo, reduce)
        for task, result in results:
            if checkpoint is not None:
                checkpoint.save(task, result)
            store(task, result)
            bar.update(1)
            clock.tick(len(todo) if isinstance(todo, list) else None)
    return {"batches_resumed": resumed, "batches_total": total}


def attack_manifest(
    probe, root, batch_size: int, reduction: str, backend: str = "numpy", device: str = "cpu", grid: dict | None = None
) -> dict:
    """What produced a checkpoint's batches (``attacks.executors.checkpoint``): for a counts reduction
    also ``grid``, what chose its stored threshold grid (the trials, pilot trials, delta and confidence
    that ``fix_grid`` passes to ``pilot_grid``), since its counts are counts over that grid."""
    from attacks.executors.checkpoint import project_version

    return {
        "version": 2,
        "project_version": project_version(),
        "probe": getattr(probe, "registry_name", probe.name),
        "class": type(probe).__name__,
        "params": probe.params(),
        "code": probe.provenance(),
        "seed": str(root.entropy),
        "spawn_key": list(root.spawn_key),
        "batch_size": int(batch_size),
        "reduction": reduction,
        "backend": backend,
        "device": device,  # a CPU and a CUDA torch generator draw different scores from one seed
        **({"grid": grid} if reduction == "counts" else {}),
    }


class _Clock:
    """Prints the plan with a time estimate once the batches run at full speed (after the first
    ``in_flight`` batches, which include starting the workers), if the run will take over a minute."""

    def __init__(self, plan, log):
        self.plan, self.log, self.done, self.since = plan, log, 0, None

    def tick(self, todo: int | None) -> None:
        self.done += 1
        if self.plan is None or self.log is None:
            return
        warm = self.plan.in_flight
        if self.done == warm:
            self.since = time.perf_counter()
        elif self.done == 2 * warm and self.since is not None:
            per_batch = (time.perf_counter() - self.since) / warm  # wall time per batch, all workers busy
            remaining = (2 * self.plan.batches if todo is None else todo) - self.done
            if per_batch * remaining > 60:
                self.log(self.plan.describe(per_batch * remaining))


def _runner(executor, workers, scheduler):
    own = isinstance(executor, str)
    return (get_executor(executor, workers, scheduler) if own else executor), own


def collect_scores(
    probe,
    trials: int,
    seed,
    executor="inprocess",
    workers: int = 2,
    scheduler: str | None = None,
    checkpoint_dir=None,
    progress: bool = False,
    batch_size: int | None = None,
    log=None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Scores of ``trials`` runs of each world (world 0, world 1), batch by batch, resuming from and
    writing to ``checkpoint_dir`` (a ``Checkpoint`` or a directory) if given."""
    from attacks.executors.checkpoint import Checkpoint
    from attacks.probes import check_trials

    trials = check_trials(trials)
    batch_size = int(batch_size or probe.batch_size)
    root = root_seed(seed)
    checkpoint = checkpoint_dir
    if checkpoint is not None and not isinstance(checkpoint, Checkpoint):
        checkpoint = Checkpoint(checkpoint, attack_manifest(probe, root, batch_size, "sorted"))
    worlds = [np.empty(trials), np.empty(trials)]  # filled in place as batches finish

    def store(task, scores):
        start = task.index * batch_size
        worlds[task.world][start : start + task.size] = scores

    runner, own = _runner(executor, workers, scheduler)
    try:
        info = _run(
            probe,
            iter_batches(trials, batch_size, root),
            runner,
            checkpoint=checkpoint,
            store=store,
            progress=progress,
            log=log,
            label=probe.name,
        )
    finally:
        if own:
            runner.close()
    info.update(
        executor=getattr(runner, "name", type(runner).__name__),
        workers=getattr(runner, "workers", 1),
        recomputed=list(checkpoint.corrupted) if checkpoint is not None else [],
    )
    return worlds[0], worlds[1], info


def fix_grid(probe, plan, root, runner, checkpoint, delta, confidence, progress) -> ThresholdGrid:
    """The threshold grid: stored in the checkpoint, else chosen on a fresh pilot batch (whose scores stay
    on a CUDA device and are sorted there when the batches run in this process: ``_pilot_buffers``)."""
    if checkpoint is not None:
        stored = checkpoint.load_grid()
        if stored is not None:
            return ThresholdGrid.from_dict(stored)
    pilot, reduce = _pilot_buffers(probe, plan.pilot_trials, runner)

    def store(task, scores):
        start = task.index * plan.batch_size
        pilot[task.world][start : start + task.size] = scores

    _run(
        probe,
        pilot_batches(plan.pilot_trials, plan.batch_size, root),
        runner,
        store=store,
        reduce=reduce,
        progress=progress,
        label=f"{probe.name} pilot",
    )
    grid = pilot_grid(pilot[0], pilot[1], plan.trials, plan.trials, delta, confidence)
    if checkpoint is not None:
        checkpoint.save_grid(grid.to_dict())
    return grid


def _keep_on_device(scores):
    return scores


def _pilot_buffers(probe, trials: int, runner) -> tuple[list, object]:
    """Both worlds' pilot buffers and the batches' reduction: tensors on the probe's device (batches kept
    there, no copy to the host) where ``attacks.backend.pilot_device`` names one and the batches run in
    this process; else NumPy arrays (each batch copied to the host, as before)."""
    device = pilot_device(probe, trials) if getattr(runner, "name", None) == "inprocess" else None
    if device is None:
        return [np.empty(trials), np.empty(trials)], None
    import torch

    return [torch.empty(trials, dtype=torch.float64, device=device) for _ in (0, 1)], _keep_on_device


def collect_counts(
    probe, trials: int, seed, plan, delta: float, confidence: float, options, checkpoint=None
) -> tuple[ThresholdGrid, np.ndarray, np.ndarray, dict]:
    """(grid, counts without canary, counts with canary, bookkeeping) of ``trials`` runs of each world,
    the grid fixed by a pilot batch before any test batch is drawn."""
    root = root_seed(seed)
    runner, own = _runner(options.executor, options.workers, options.scheduler)
    log = options.log or (lambda message: None)
    try:
        grid = fix_grid(probe, plan, root, runner, checkpoint, delta, confidence, options.progress)
        totals = [CountsTotal(grid), CountsTotal(grid)]
        info = _run(
            probe,
            iter_batches(trials, plan.batch_size, root),
            runner,
            checkpoint=checkpoint,
            reduce=grid.count,
            store=lambda task, counts: totals[task.world].add(counts),
            progress=options.progress,
            log=log,
            label=probe.name,
            plan=plan,
            size=grid.size,
        )
    finally:
        if own:
            runner.close()
    if info["batches_total"] is None:
        info["batches_total"] = 2 * plan.batches
    info.update(
        executor=getattr(runner, "name", type(runner).__name__),
        workers=getattr(runner, "workers", 1),
        recomputed=list(checkpoint.corrupted) if checkpoint is not None else [],
        pilot_trials=plan.pilot_trials,
    )
    return grid, totals[0].vector(), totals[1].vector(), info
