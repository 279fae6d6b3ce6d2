"""``--executor auto``: worker processes only for long probes; an explicit
executor is used as asked."""

from types import SimpleNamespace

from reports.audit.probes import AUTO_PARALLEL_SECONDS, PlannedProbe, choose_executor

PROBE = SimpleNamespace(batch_size=100)


def options(executor="auto", workers=None):
    return SimpleNamespace(executor=executor, workers=workers)


def test_auto_runs_long_multi_batch_probes_on_processes():
    assert choose_executor(PROBE, 2000, AUTO_PARALLEL_SECONDS + 1, options(workers=2)) == ("processes", 2)
    # no more workers than batches (of both worlds)
    assert choose_executor(PROBE, 200, AUTO_PARALLEL_SECONDS + 1, options(workers=8)) == ("processes", 4)
    assert choose_executor(PROBE, 100, AUTO_PARALLEL_SECONDS + 1, options(workers=8)) == ("processes", 2)


def test_auto_keeps_short_or_unestimated_probes_in_process():
    assert choose_executor(PROBE, 2000, AUTO_PARALLEL_SECONDS - 1, options(workers=2)) == ("inprocess", 1)
    assert choose_executor(PROBE, 2000, None, options(workers=2)) == ("inprocess", 1)
    assert choose_executor(PROBE, 2000, 1e6, options(workers=1)) == ("inprocess", 1)


def test_explicit_executor_is_used_as_asked():
    assert choose_executor(PROBE, 100, 0.1, options("processes", 3)) == ("processes", 3)
    assert choose_executor(PROBE, 2000, 1e6, options("inprocess")) == ("inprocess", 1)


def test_wall_estimate_divides_by_the_worker_processes():
    planned = PlannedProbe(None, 2000, PROBE, {}, None, 100.0, "processes", 4)
    assert planned.wall_estimate == 25.0
    assert PlannedProbe(None, 2000, PROBE, {}, None, 100.0).wall_estimate == 100.0
