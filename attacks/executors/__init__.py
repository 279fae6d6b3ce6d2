"""Executors: where the batches of an attack run (same seed, same scores on every executor)."""

from __future__ import annotations

import os

from accounting.errors import ConfigurationError, require_number
from attacks.executors.base import (
    BatchFailed,
    BatchTask,
    iter_batches,
    pilot_batches,
    plan_batches,
    root_seed,
    run_task,
    stream,
)
from attacks.executors.local import InProcessExecutor, ProcessExecutor

EXECUTORS = ("inprocess", "processes", "dask")


def max_local_workers() -> int:
    """Most local worker processes ``processes`` (and a local Dask cluster) may start: 4 a core, at least 64.
    The pool starts a process per pending batch up to ``workers``, so ``--workers 100000`` would otherwise
    try to start as many processes as there are batches."""
    return max(64, 4 * (os.cpu_count() or 1))


def get_executor(name: str = "inprocess", workers: int = 2, scheduler: str | None = None):
    """Build an executor by name; close it (or use it as a context manager) when done."""
    workers = int(require_number("workers", workers, low=1, integer=True))
    local = name == "processes" or (name == "dask" and not scheduler)
    if local and workers > max_local_workers():
        raise ConfigurationError(
            "workers", f"{workers} local processes on {os.cpu_count()} cores; at most {max_local_workers()} here"
        )
    if name == "inprocess":
        if scheduler:
            raise ConfigurationError("scheduler", "only the dask executor takes a scheduler address")
        return InProcessExecutor()
    if name == "processes":
        if scheduler:
            raise ConfigurationError("scheduler", "only the dask executor takes a scheduler address")
        return ProcessExecutor(workers)
    if name == "dask":
        from attacks.executors.dask_cluster import DaskExecutor

        return DaskExecutor(scheduler, workers)
    raise ConfigurationError("executor", f"unknown executor {name!r}; choose from {', '.join(EXECUTORS)}")


__all__ = [
    "EXECUTORS",
    "BatchFailed",
    "BatchTask",
    "iter_batches",
    "pilot_batches",
    "InProcessExecutor",
    "ProcessExecutor",
    "get_executor",
    "plan_batches",
    "root_seed",
    "run_task",
    "stream",
]
