"""Dask distributed executor: batches run as tasks on a cluster (an existing scheduler, or a
``LocalCluster`` started for the attack). The probe is scattered once to every worker."""

from __future__ import annotations

from accounting.errors import ConfigurationError
from attacks.executors.base import run_task


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
                self._cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1,
                                             dashboard_address=None)
                self._client = Client(self._cluster)
        except OSError as exc:
            raise ConfigurationError("scheduler",
                                     f"cannot reach Dask scheduler {scheduler!r}: {exc}") from None

    def run(self, probe, tasks):
        from distributed import as_completed

        tasks = list(tasks)
        if not tasks:
            return
        probe_future = self._client.scatter(probe, broadcast=True, hash=False)
        futures = {self._client.submit(run_task, probe_future, task, pure=False): task for task in tasks}
        for future in as_completed(futures):
            yield futures[future], future.result()

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
