"""``LocalObjectivesBatch`` against one ``LocalObjectives`` per run, and ``dpfed.pne.spawn`` against
numpy's ``SeedSequence``: bit-identical, by construction (deterministic, fixed seeds)."""

import numpy as np
import pytest

from dpfed.pne.local_batch import LocalObjectivesBatch
from dpfed.pne.objectives import LocalObjectives, get_objective
from dpfed.pne.spawn import as_uint64, child_words, generator


@pytest.mark.parametrize("name", ["garland", "himmelblau"])
@pytest.mark.parametrize("kind", ["bumps", "shift", "none"])
@pytest.mark.parametrize("clients", [1, 3, 8, 10, 20])
def test_batch_values_equal_one_run_at_a_time(name, kind, clients):
    objective = get_objective(name)
    d = objective.domain.shape[0]
    runs = 6
    batch = LocalObjectivesBatch(objective, clients, 0.3, kind, [np.random.default_rng(k) for k in range(runs)])
    single = [LocalObjectives(objective, clients, 0.3, kind, rng=np.random.default_rng(k)) for k in range(runs)]
    lo, hi = objective.domain[:, 0], objective.domain[:, 1]
    points = np.random.default_rng(99)
    for nodes in (1, 2, 3, 5, 16):
        for rows in ([4, 0, 5, 2], [3]):
            x = lo + (hi - lo) * points.random((len(rows), nodes, d))
            expected = np.stack([single[r].values(x[i]) for i, r in enumerate(rows)])
            assert np.array_equal(batch.values(rows, x), expected)


def test_spawned_words_and_generators_equal_numpy():
    rng = np.random.default_rng(5)
    entropies = [0, 1, 2**32 - 1, 2**32, 2**63 - 1, 2**64 + 7, 2**128 - 1] + [
        int(e) for e in rng.integers(2**63, size=50)
    ]
    words = child_words(entropies, 4, 8)
    for row, entropy in zip(words, entropies, strict=True):
        children = np.random.SeedSequence(entropy).spawn(4)
        for child, child_row in zip(children, row, strict=True):
            assert np.array_equal(child.generate_state(8), child_row)
            assert np.array_equal(child.generate_state(4, np.uint64), as_uint64(child_row))
        assert np.array_equal(generator(as_uint64(row[3])).random(4), np.random.default_rng(children[3]).random(4))


def test_run_streams_batch_equals_from_seed_for_every_kind_of_seed():
    from dpfed.pne.seeding import RunStreams

    def seeds():  # fresh objects each time: from_seed spawns from a SeedSequence and draws from a Generator
        ss = np.random.SeedSequence
        return [5, ss(6), ss([1, 2]), ss(8).spawn(1)[0], np.random.default_rng(7), 2**130, np.int64(9)]

    for pick in (slice(2, 3), slice(None)):  # only a fallback seed; every kind
        batch, single = RunStreams.batch(seeds()[pick]), [RunStreams.from_seed(s) for s in seeds()[pick]]
        for a, b in zip(batch, single, strict=True):
            assert a.partition_seed == b.partition_seed
            for name in ("objective", "observation", "privacy"):
                assert np.array_equal(getattr(a, name).random(3), getattr(b, name).random(3))
    assert len(RunStreams.batch([None, None])) == 2  # fresh entropy: nothing to compare with


def test_a_seed_sequence_given_twice_gives_two_runs_of_different_streams():
    # from_seed spawns from a SeedSequence, so the same object twice gives children 0-3, then 4-7: two
    # independent runs, never one run repeated (which would silently halve a probe's independent trials)
    from dpfed.pne.seeding import RunStreams

    seq = np.random.SeedSequence(11)
    first, second = RunStreams.batch([seq, seq])
    assert not np.array_equal(first.privacy.random(3), second.privacy.random(3))
    assert seq.n_children_spawned == 8


def test_spawn_refuses_entropy_outside_the_pool():
    with pytest.raises(ValueError):
        child_words([2**128], 4, 8)
    with pytest.raises(ValueError):
        child_words([-1], 4, 8)
