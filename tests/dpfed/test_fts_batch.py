"""The trial axis: a batch of K runs reproduces K one-at-a-time runs with the same seeds exactly."""

import numpy as np
import pytest

from dpfed.fts import FTSConfig, run_fts
from dpfed.fts.agents import FeaturePosteriors
from dpfed.fts.algorithm import run_fts_batch
from dpfed.fts.features import RandomFourierFeatures
from dpfed.objectives import make_objective
from dpfed.trials import TrialStreams, split_streams

SMALL = dict(
    objective="synthetic",
    dim=1,
    num_agents=5,
    rounds=12,
    init_points=3,
    num_features=16,
    lengthscale=0.05,
    local_lengthscale=0.05,
    local_num_features=12,
    gp_lengthscale=0.05,
    candidates=32,
    refine_steps=1,
    refine_samples=4,
    subregions=2,
    weight_hold=3,
    weight_decay=5,
)


def assert_same_run(single, batch, k):
    one = batch.trial(k)
    for name in ("queries", "observed", "true_values", "utility_per_agent", "used_broadcast"):
        np.testing.assert_array_equal(getattr(single, name), getattr(one, name), err_msg=name)
    left, right = single.transcript.messages, one.transcript.messages
    assert [(m.round, m.sender, m.receiver, m.name) for m in left] == [
        (m.round, m.sender, m.receiver, m.name) for m in right
    ]
    for a, b in zip(left, right, strict=True):
        np.testing.assert_array_equal(a.payload, b.payload)
    if single.sampled is not None:
        np.testing.assert_array_equal(single.sampled, one.sampled)
    assert single.releases == one.releases


@pytest.mark.parametrize(
    "changes",
    [
        dict(),  # DP-FTS-DE, each run draws its own objective
        dict(algorithm="fts-de"),
        dict(algorithm="dp-fts", planted_bug="renormalise-sampled"),
        dict(algorithm="ts", explore_uniform=True),
        dict(rate=0.05, empty_sample_fallback="uniform"),  # empty samples happen: per-run fallback draws
    ],
)
def test_batch_reproduces_one_at_a_time_runs(changes):
    config = FTSConfig(**{**SMALL, **changes})
    seeds = [3, np.random.default_rng(11), 5]
    batch = run_fts_batch(config, seeds)
    singles = [run_fts(config, s) for s in (3, np.random.default_rng(11), 5)]
    for k, single in enumerate(singles):
        assert_same_run(single, batch, k)
    assert batch.trials == 3
    assert not np.array_equal(batch.queries[0], batch.queries[1])  # the runs are independent


def test_batch_with_canary_shared_objective_and_final_release():
    config = FTSConfig(**SMALL, planted_bug="unnoised-final-aggregate").with_canary_slot()
    objective = make_objective(config, np.random.default_rng(0))
    canary = np.zeros(config.num_features)
    canary[0] = 2.0
    batch = run_fts_batch(config, [7, 8], objective=objective, canary_vector=canary)
    for k, seed in enumerate([7, 8]):
        single = run_fts(config, seed, objective=objective, canary_vector=canary)
        assert_same_run(single, batch, k)
        final = single.transcript.filter(name="final-aggregate")
        assert len(final) == 1 and final[0].payload.shape == (2, config.num_features)
    lean = run_fts_batch(config, [7, 8], objective=objective, canary_vector=canary, record_uploads=False)
    np.testing.assert_array_equal(lean.broadcasts, batch.broadcasts)
    assert lean.uploads is None


def test_trial_streams_draw_what_each_generator_draws():
    streams = TrialStreams([np.random.default_rng(s) for s in (1, 2)])
    draws = streams.standard_normal((2, 3, 4)), streams.random((2, 5)), streams.normal(1.0, 2.0, size=(2, 3))
    for k, seed in enumerate((1, 2)):
        g = np.random.default_rng(seed)
        np.testing.assert_array_equal(draws[0][k], g.standard_normal((3, 4)))
        np.testing.assert_array_equal(draws[1][k], g.random(5))
        np.testing.assert_array_equal(draws[2][k], g.normal(1.0, 2.0, size=3))
    with pytest.raises(ValueError):
        streams.random((3, 2))  # leading axis must be the trial axis
    with pytest.raises(NotImplementedError):
        streams.integers(5, size=(2,))
    split = split_streams([4, 5], 2)
    np.testing.assert_array_equal(split[1].generators[0].random(3), np.random.default_rng(4).spawn(2)[1].random(3))


def test_fused_update_and_draw_equals_update_then_draw():
    # add(x, y, rng) must return what add(x, y) followed by sample(rng) returns (same random numbers),
    # and a batched posterior over (trials, agents) must equal each trial's own posterior.
    feats = [RandomFourierFeatures.draw(1, 10, 0.2, rng=s) for s in (1, 2)]
    stacked = RandomFourierFeatures.stack(feats)
    rng = np.random.default_rng(3)
    x, y = rng.random((2, 3, 6, 1)), rng.standard_normal((2, 3, 6))
    batched = FeaturePosteriors((2, 3), stacked, 0.01, centre=True, capacity=2)
    fused = batched.add(x, y, TrialStreams([np.random.default_rng(9), np.random.default_rng(10)]))
    for k in range(2):
        post = FeaturePosteriors(3, feats[k], 0.01, centre=True)
        post.add(x[k], y[k])
        np.testing.assert_allclose(fused[k], post.sample(np.random.default_rng(9 + k)), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(batched.posterior_mean()[k], post.posterior_mean(), rtol=1e-9, atol=1e-9)


def test_pne_batch_reproduces_one_at_a_time_runs():
    # DP-Fed-PNE runs diverge after the first elimination; the engine groups them by phase shape and
    # must still give every run exactly its one-at-a-time transcript (final cut phase uploaded too).
    from dpfed.pne.algorithm import RewardOverride
    from dpfed.pne.private import run_dp_fed_pne, run_dp_fed_pne_batch

    settings = dict(epsilon=2.0, final_upload=True, reward_override=RewardOverride(1, 3, 2, 1.0))
    batch = run_dp_fed_pne_batch("garland", 6, 300, [0, 1, 2, 3], **settings)
    for seed, run in zip([0, 1, 2, 3], batch, strict=True):
        single = run_dp_fed_pne("garland", 6, 300, seed=seed, **settings)
        np.testing.assert_array_equal(single.instant_regret, run.instant_regret)
        assert [p.to_dict() for p in single.phases] == [p.to_dict() for p in run.phases]
        assert len(single.transcript.messages) == len(run.transcript.messages)
        for a, b in zip(single.transcript.messages, run.transcript.messages, strict=True):
            assert (a.round, a.sender, a.name) == (b.round, b.sender, b.name)
            np.testing.assert_array_equal(np.asarray(a.payload.get("means", 0)), np.asarray(b.payload.get("means", 0)))
    assert len({tuple(tuple(k) for k in r.phases[-1].nodes) for r in batch}) > 1  # the runs did diverge


def test_weight_space_and_matheron_posteriors_agree():
    # Two exact representations of one posterior: same mean (closed form) whatever the representation.
    from dpfed.fts.weight_space import WeightSpacePosteriors

    feats = RandomFourierFeatures.draw(1, 6, 0.3, rng=2)
    rng = np.random.default_rng(8)
    x, y = rng.random((4, 9, 1)), rng.standard_normal((4, 9))
    for centre in (False, True):
        matheron, weights = FeaturePosteriors(4, feats, 0.05, centre), WeightSpacePosteriors(4, feats, 0.05, centre)
        matheron.add(x, y)
        weights.add(x, y)
        np.testing.assert_allclose(weights.posterior_mean(), matheron.posterior_mean(), rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(weights.offsets, matheron.offsets)
