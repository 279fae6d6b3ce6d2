"""Null worlds of the DP-DUETS and DP-FKM probes changed for issue 21 (releases drawn by the algorithm,
canaries beyond the clip bound).

Null world: "canary at the clip bound" vs "canary at 10x the bound". A correct implementation clips both
to the same value, so the two worlds have the same law and every positive rigorous lower bound is a false
positive. Each probe: AUDITS = 200 audits of TRIALS trials per world (i.i.d. trials, drawn in large
batches and split), Clopper-Pearson (the audit's estimator) at confidence 0.95 and delta 1e-3 (a delta at
which these trials can certify a positive epsilon: the power check below shows the harness can fail).
The count of positive bounds must not be significantly above Binomial(AUDITS, 0.05): a one-sided
binomial test at level 0.001, so each test fails falsely with probability <= 0.001 (seeds are fixed).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from attacks.estimators import clopper_pearson_lower_bound
from attacks.probes import get_probe

AUDITS, TRIALS, CONFIDENCE, DELTA, LEVEL = 200, 1000, 0.95, 1e-3, 0.001
SMALL_DUETS = dict(agents=3, horizon=20, candidates=150)
PROBES = {
    "dp-duets-end-to-end": SMALL_DUETS,
    "dp-duets-end-to-end-reward": SMALL_DUETS,
    "fkm-loss": {},
    "fkm-end-to-end": {},
}


def _scores(probe, world, total, rng, batch=20_000):
    return np.concatenate([probe.scores(world, min(batch, total - i), rng) for i in range(0, total, batch)])


def _positive_rate(out, inn, audits=AUDITS) -> int:
    out, inn = out.reshape(audits, TRIALS), inn.reshape(audits, TRIALS)
    return sum(clopper_pearson_lower_bound(o, i, DELTA, CONFIDENCE).epsilon > 0 for o, i in zip(out, inn, strict=True))


@pytest.mark.parametrize("name", sorted(PROBES))
def test_canary_beyond_the_clip_is_a_null_world_for_the_correct_code(name):
    rng = np.random.default_rng(2026)
    at_bound = get_probe(name, **PROBES[name])
    beyond = get_probe(name, **PROBES[name], canary_scale=10.0)
    out = _scores(at_bound, 1, AUDITS * TRIALS, rng)
    inn = _scores(beyond, 1, AUDITS * TRIALS, rng)
    positives = _positive_rate(out, inn)
    p = stats.binomtest(positives, AUDITS, 1 - CONFIDENCE, alternative="greater").pvalue
    assert p > LEVEL, f"{positives}/{AUDITS} null audits positive"


def test_the_harness_has_power_on_a_real_canary():
    # the same harness on the canary's real worlds (absent vs present, 10x the bound), 50 audits: most are
    # positive, so the null tests above could fail. Measured: 50 of 50 positive with this seed and 200 of 200
    # with another (seed 99), so the false-failure probability for a random seed is negligible (< 1e-9 at any
    # positive rate above 0.9).
    rng, audits = np.random.default_rng(7), 50
    probe = get_probe("dp-duets-end-to-end", **SMALL_DUETS, canary_scale=10.0)
    out, inn = _scores(probe, 0, audits * TRIALS, rng), _scores(probe, 1, audits * TRIALS, rng)
    assert _positive_rate(out, inn, audits) > audits * 0.5


def test_dataset_level_fkm_scores_of_one_world_are_a_null_world():
    # fkm-dataset-end-to-end has no canary beyond a clip (its canary is a loss of +B against 0), so its null
    # world is two independent samples of world 0, scored by the probe: the same law, so any positive rigorous
    # bound is a false positive. Same binomial check as above (false failure <= 0.001).
    rng = np.random.default_rng(2027)
    probe = get_probe("fkm-dataset-end-to-end")
    out, inn = _scores(probe, 0, AUDITS * TRIALS, rng), _scores(probe, 0, AUDITS * TRIALS, rng)
    positives = _positive_rate(out, inn)
    assert stats.binomtest(positives, AUDITS, 1 - CONFIDENCE, alternative="greater").pvalue > LEVEL, positives
    # the same harness on the probe's real worlds: most audits are positive, so this check can fail (measured:
    # 200 of 200 positive with this seed and seeds 5 and 6; the null side gave 0 of 200 for all three)
    real = _positive_rate(_scores(probe, 0, AUDITS * TRIALS, rng), _scores(probe, 1, AUDITS * TRIALS, rng))
    assert real > AUDITS * 0.5, real
