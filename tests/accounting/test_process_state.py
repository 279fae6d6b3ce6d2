"""Accountants leave process-wide state alone, also when threads (as Dask workers use) run them
concurrently: the address-space limit, the warning filters, the root logger's handlers and absl's
logger filters are the same before, during and after."""

import logging
import resource
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

from accounting import Composition, SubsampledGaussian, account_all

# q = 0.35, z = 1 makes dp-accounting log warnings (orders it cannot evaluate) on every call.
CONFIGS = [(0.35, 1.0, 5), (0.1, 2.0, 20)]


def state():
    return (
        resource.getrlimit(resource.RLIMIT_AS),
        list(warnings.filters),
        list(logging.getLogger().handlers),
        list(logging.getLogger("absl").filters),
    )


def test_concurrent_accountants_leave_process_state_alone():
    before = state()
    limits_seen, stop = set(), threading.Event()

    def watch():
        while not stop.is_set():
            limits_seen.add(resource.getrlimit(resource.RLIMIT_AS))
            stop.wait(0.001)

    def run(config):
        q, z, steps = config
        return account_all(Composition.of(SubsampledGaussian(q, z), steps), 1e-5, ["prv", "dpa-rdp", "rdp"])

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(run, CONFIGS * 2))
    finally:
        stop.set()
        watcher.join()
    assert all(r.ok for rows in results for r in rows), [r for rows in results for r in rows if not r.ok]
    assert state() == before
    assert limits_seen == {before[0]}
    # each thread got its own dp-accounting warnings, none leaked into another's result
    warned = [rows[1].details["warnings"] for rows in results]
    assert all(w for w, config in zip(warned, CONFIGS * 2, strict=True) if config[0] == 0.35)
