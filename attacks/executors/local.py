"""In-process and local multi-process executors.

Both yield ``(task, scores)`` pairs as batches finish; the caller reassembles them in batch order, so
the result does not depend on completion order.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from attacks.executors.base import BatchFailed, BatchTask, run_task


class InProcessExecutor:
    """Runs the batches one after another in this process (each batch is vectorised)."""

    name = "inprocess"
    workers = 1

    def run(self, probe, tasks: Iterable[BatchTask], reduce=None) -> Iterator[tuple[BatchTask, np.ndarray]]:
        """``(task, scores)`` per finished batch, or ``(task, reduce(scores))`` with a reduction."""
        for task in tasks:
            yield task, run_task(probe, task, reduce)

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ProcessExecutor(InProcessExecutor):
    """Runs batches in ``workers`` local processes (``concurrent.futures``, spawn start method so that
    threads in the parent never deadlock a child). At most ``2 * workers`` batches are in flight, so
    memory stays bounded and an interruption loses little work."""

    name = "processes"

    def __init__(self, workers: int = 2, start_method: str = "spawn"):
        self.workers = max(1, int(workers))
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context(start_method))

    def run(self, probe, tasks, reduce=None):
        pending = {}
        queue = iter(tasks)
        exhausted = False
        while not exhausted or pending:
            while not exhausted and len(pending) < 2 * self.workers:
                task = next(queue, None)
                if task is None:
                    exhausted = True
                else:
                    pending[self._submit(probe, task, reduce)] = task
            if not pending:
                return
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                task = pending.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool:
                    raise BatchFailed(
                        f"a worker process died while computing {task.key} (killed, or out of "
                        "memory); the attack has no result"
                    ) from None
                yield task, result

    def _submit(self, probe, task, reduce):
        try:
            return self._pool.submit(run_task, probe, task, reduce)
        except BrokenProcessPool:
            raise BatchFailed("the worker processes died; the attack has no result") from None

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
