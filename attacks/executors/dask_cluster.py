"""Dask distributed executor: batches run as tasks on a cluster (an existing scheduler, or a
``LocalCluster`` started for the attack). The probe is scattered once to every worker."""

from __future__ import annotations

import itertools

from accounting.errors import ConfigurationError
from attacks.executors.base import BatchFailed, run_task


class DaskExecutor:
    """Runs batches on a Dask cluster. ``scheduler`` is an address such as ``tcp://host:8786``; without
    one a LocalCluster with ``workers`` single-threaded worker processes is started and closed again."""

    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int = 2, timeout: float = 10.0):
        try:
            from distributed import Client, LocalCluster
        except ImportError:  # pragma: no cover - dask is a declared dependency
            raise ConfigurationError("executor", "dask.distributed is not installed") from None
        self.workers = max(1, int(workers))
        self._cluster = None
        try:
            if scheduler:
                self._client = Client(scheduler, timeout=timeout)
            else:
                self._cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, dashboard_address=None)
                self._client = Client(self._cluster)
        except (OSError, ValueError, TypeError) as exc:  # unreachable, or not an address (unknown scheme)
            raise ConfigurationError("scheduler", f"cannot reach Dask scheduler {scheduler!r}: {exc}") from None

    def run(self, probe, tasks, reduce=None):
        from distributed import as_completed

        tasks = iter(tasks)
        probe_future = None
        futures = {}
        window = 4 * self.workers  # tasks in flight: memory stays bounded however many batches there are

        def submit():
            task = next(tasks, None)
            if task is not None:
                futures[self._client.submit(run_task, probe_future, task, reduce, pure=False)] = task
            return task is not None

        first = next(tasks, None)
        if first is None:
            return
        probe_future = self._client.scatter(probe, broadcast=True, hash=False)
        tasks = itertools.chain([first], tasks)
        for _ in range(window):
            if not submit():
                break
        pool = as_completed(list(futures))
        for future in pool:
            task = futures.pop(future)
            try:
                result = future.result()
            except ConfigurationError:
                raise
            except Exception as exc:  # noqa: BLE001 - a lost worker or a cancelled task
                if type(exc).__module__.startswith("distributed"):
                    raise BatchFailed(f"the Dask cluster lost {task.key}: {exc}") from None
                raise
            if submit():
                pool.add(list(futures)[-1])
            yield task, result

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def check_scheduler(scheduler: str, timeout: float = 10.0) -> None:
    """Connect to the Dask scheduler at ``scheduler`` and disconnect: ConfigurationError (exit 2) if it
    cannot be reached, so that a command can refuse before it writes anything."""
    DaskExecutor(scheduler, timeout=timeout).close()
