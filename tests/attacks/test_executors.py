"""Executors: seeded batches give identical scores on every executor; checkpoints resume."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from accounting.errors import ConfigurationError
from attacks.attack import collect_scores, run_attack
from attacks.executors import InProcessExecutor, get_executor, plan_batches, run_task
from attacks.probes import get_probe
from attacks.probes.base import Probe


def _probe():
    probe = get_probe("subsampled-gaussian", rounds=3)
    probe.batch_size = 700
    return probe


def test_plan_batches_cover_trials_and_seed_independently_of_count():
    tasks = plan_batches(2500, 1000, 5)
    assert [t.size for t in tasks] == [1000, 1000, 500] * 2 and [t.world for t in tasks] == [0] * 3 + [1] * 3
    longer = plan_batches(4000, 1000, 5)
    for a, b in zip(tasks[:2], longer[:2], strict=True):
        assert np.array_equal(a.seed.generate_state(4), b.seed.generate_state(4))
    assert len({tuple(t.seed.generate_state(2)) for t in longer}) == len(longer)


def test_in_process_scores_do_not_depend_on_batch_order():
    probe, tasks = _probe(), plan_batches(3000, 700, 9)
    forward = {t.key: s for t, s in InProcessExecutor().run(probe, tasks)}
    backward = {t.key: s for t, s in InProcessExecutor().run(probe, tasks[::-1])}
    assert all(np.array_equal(forward[k], backward[k]) for k in forward)


def test_same_seed_same_scores_on_every_executor():
    from distributed import LocalCluster

    probe = _probe()
    reference = collect_scores(probe, 3000, 42, executor="inprocess")
    results = [
        collect_scores(probe, 3000, 42, executor="processes", workers=2),
        collect_scores(probe, 3000, 42, executor="processes", workers=1),
    ]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        results.append(collect_scores(probe, 3000, 42, executor="dask", scheduler=cluster.scheduler_address))
    for out, inn, _info in results:
        assert np.array_equal(out, reference[0]) and np.array_equal(inn, reference[1])
    assert results[-1][2]["executor"] == "dask"
    different = collect_scores(probe, 3000, 43)
    assert not np.array_equal(different[0], reference[0])


class _Interrupting(InProcessExecutor):
    """Stops (as Ctrl-C would) after ``limit`` finished batches."""

    def __init__(self, limit):
        self.limit = limit

    def run(self, probe, tasks):
        for count, item in enumerate(super().run(probe, tasks)):
            if count == self.limit:
                raise KeyboardInterrupt
            yield item


def test_checkpoint_resumes_an_interrupted_attack(tmp_path):
    probe = _probe()
    with pytest.raises(KeyboardInterrupt):
        collect_scores(probe, 3000, 7, executor=_Interrupting(3), checkpoint_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npy"))) == 3
    out, inn, info = collect_scores(probe, 3000, 7, checkpoint_dir=tmp_path)
    assert info["batches_resumed"] == 3 and info["batches_total"] == 10
    fresh = collect_scores(probe, 3000, 7)
    assert np.array_equal(out, fresh[0]) and np.array_equal(inn, fresh[1])
    assert not list(tmp_path.glob("*.tmp"))  # atomic writes leave no temporary files
    # a rerun with no seed adopts the checkpoint's seed and redoes nothing
    result = run_attack(probe, 3000, seed=None, checkpoint_dir=tmp_path, claim_epsilon=2.0)
    assert result.batches_resumed == result.batches_total == 10
    with pytest.raises(ConfigurationError, match="checkpoint"):
        collect_scores(probe, 3000, 8, checkpoint_dir=tmp_path)


@dataclass
class _BrokenProbe(Probe):
    mode: str = "shape"
    name = "broken"

    def scores(self, world, trials, rng):
        if self.mode == "shape":
            return np.zeros(trials + 1)
        if self.mode == "nan":
            return np.full(trials, np.nan)
        return ["x"] * trials


@pytest.mark.parametrize("mode", ["shape", "nan", "text"])
def test_bad_probe_output_is_a_configuration_error(mode):
    with pytest.raises(ConfigurationError, match="probe"):
        run_task(_BrokenProbe(mode), plan_batches(5, 5, 0)[0])


def test_executor_arguments_are_validated():
    with pytest.raises(ConfigurationError, match="executor"):
        get_executor("cloud")
    with pytest.raises(ConfigurationError, match="workers"):
        get_executor("processes", workers=0)
    with pytest.raises(ConfigurationError, match="scheduler"):
        get_executor("inprocess", scheduler="tcp://x:1")
    with pytest.raises(ConfigurationError, match="seed"):
        plan_batches(10, 5, -1)


@pytest.mark.parametrize("name", ["processes", "dask"])
def test_local_workers_beyond_the_machine_are_refused_before_any_process_starts(name):
    # the pool starts a process per pending batch up to `workers`: --workers 100000 tried to start one per batch
    from attacks.executors import max_local_workers

    with pytest.raises(ConfigurationError, match="workers.*local processes"):
        get_executor(name, workers=max_local_workers() + 1)


def test_plan_refuses_workers_whose_one_trial_batches_exceed_memory():
    # --workers 1e9 used to clamp the batch to one trial and print a plan needing 61 GB on a 24 GB machine
    from attacks.run_plan import plan_run

    with pytest.raises(ConfigurationError, match="workers.*use fewer workers"):
        plan_run(get_probe("gaussian"), 10**6, workers=10**9, memory=24 * 2**30)
    assert plan_run(get_probe("gaussian"), 10**6, workers=16, memory=24 * 2**30).memory_bytes < 24 * 2**30
