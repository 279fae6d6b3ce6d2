"""A checkpoint writes nothing until the attack stores its first batch: a run refused before any work
(exit 2, e.g. an unreachable Dask scheduler) leaves no manifest behind, and --fresh discards an old
checkpoint only when new work replaces it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from accounting.errors import ConfigurationError
from attacks.executors.base import BatchTask
from attacks.executors.checkpoint import MANIFEST, Checkpoint

TASK = BatchTask(0, 0, 3, np.random.SeedSequence(1))


def test_opening_creates_nothing_and_the_first_save_writes_the_manifest(tmp_path):
    directory = tmp_path / "deep" / "ck"
    checkpoint = Checkpoint(directory, {"probe": "gaussian", "seed": 1})
    assert not directory.exists() and checkpoint.load(TASK) is None
    checkpoint.save(TASK, np.arange(3.0))
    assert json.loads((directory / MANIFEST).read_text()) == {"probe": "gaussian", "seed": 1}
    reopened = Checkpoint(directory, {"probe": "gaussian", "seed": 1})
    assert reopened.load(TASK).tolist() == [0.0, 1.0, 2.0]  # resumed


def test_fresh_discards_an_old_checkpoint_only_at_the_first_save(tmp_path):
    old = Checkpoint(tmp_path, {"seed": 1})
    old.save(TASK, np.arange(3.0))
    with pytest.raises(ConfigurationError, match="--fresh"):
        Checkpoint(tmp_path, {"seed": 2})
    fresh = Checkpoint(tmp_path, {"seed": 2}, fresh=True)
    assert json.loads((tmp_path / MANIFEST).read_text()) == {"seed": 1}  # untouched until new work
    assert fresh.load(TASK) is None  # the old batch is not this attack's
    fresh.save(TASK, np.ones(3))
    assert json.loads((tmp_path / MANIFEST).read_text()) == {"seed": 2}


def test_a_directory_under_a_file_is_refused_at_once(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ConfigurationError, match="not a directory"):
        Checkpoint(tmp_path / "afile" / "ck", {})


@pytest.mark.slow  # about 11 s: the connect timeout (the fast foo:// form is a case in tests/test_bad_inputs.py)
def test_unreachable_scheduler_leaves_no_checkpoint(tmp_path, capsys, monkeypatch):
    """The reported case: a TCP scheduler nobody listens on (the connect timeout cut from 10 s to 1 s here:
    what is tested is what is left behind, not how long the refusal takes)."""
    from attacks.executors.dask_cluster import DaskExecutor
    from reports.cli import main

    monkeypatch.setattr(DaskExecutor.__init__, "__defaults__", (None, 2, 1.0))

    ck = tmp_path / "ck"
    argv = ["attack", "gaussian", "--trials", "200", "--executor", "dask", "--scheduler", "tcp://127.0.0.1:1"]
    assert main([*argv, "--checkpoint", str(ck)]) == 2
    assert "cannot reach Dask scheduler" in capsys.readouterr().err and not ck.exists()


def test_fresh_recomputes_even_the_same_attacks_batches(tmp_path):
    """--fresh said "discard the checkpoint's batches and start afresh", but an unchanged attack resumed them."""
    Checkpoint(tmp_path, {"seed": 1}).save(TASK, np.arange(3.0))
    fresh = Checkpoint(tmp_path, {"seed": 1}, fresh=True)
    assert fresh.load(TASK) is None
    fresh.save(TASK, np.ones(3))
    assert Checkpoint(tmp_path, {"seed": 1}).load(TASK).tolist() == [1.0, 1.0, 1.0]


def test_two_attacks_opened_on_one_empty_directory_never_share_it(tmp_path):
    """Both found the directory empty; the second one's manifest replaced the first one's, so the first
    attack's batch was later resumed as the second attack's."""
    first, second = Checkpoint(tmp_path, {"seed": 1}), Checkpoint(tmp_path, {"seed": 2})
    same = Checkpoint(tmp_path, {"seed": 1})
    first.save(TASK, np.arange(3.0))
    with pytest.raises(ConfigurationError, match="different attack"):
        second.save(TASK, np.ones(3))
    same.save(TASK, np.arange(3.0))  # the same attack run twice at once shares it
    assert json.loads((tmp_path / MANIFEST).read_text()) == {"seed": 1}
    assert Checkpoint(tmp_path, {"seed": 1}).load(TASK).tolist() == [0.0, 1.0, 2.0]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
