"""Null worlds of the mechanism-level probes (gaussian, laplace, subsampled-gaussian, empty-sample,
fts-server, pne-reward, fedzero-scalar, dp-duets-release) and of the user-mechanism probe, which had no
null-world test of their own.

Two kinds of null world, each a pair of score laws that a correct implementation makes identical:
* canary beyond the clip: world 1 with the canary at the clip bound vs world 1 with it at 10x the bound
  (the probes that clip); a correct release clips both to the same value (the planted ``no-clip`` bug
  does not, and the power check below catches it with this harness);
* the probe's own world 0 twice, or a canary that moves nothing (``pne-reward`` with canary value 0):
  the estimator on the probe's actual score law (atoms, heavy tails) must not certify a positive epsilon;
* for the user probe, a mechanism that ignores its dataset: the learned classifier (trained on its own
  fresh runs) must not turn pure noise into evidence.
Each probe: AUDITS = 200 audits of TRIALS = 1000 trials per world, Clopper-Pearson (the audit's rigorous
estimator) at confidence 0.95 and delta 1e-3. The count of positive bounds must not be significantly above
Binomial(AUDITS, 0.05): a one-sided binomial test at level 0.001, so each test fails falsely with
probability <= 0.001 for a random seed (the seeds are fixed, so each outcome is deterministic).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from attacks.estimators import clopper_pearson_lower_bound
from attacks.probes import get_probe

DATASETS = str(Path(__file__).resolve().parents[2] / "configs" / "attack_user_example_datasets.toml")

AUDITS, TRIALS, CONFIDENCE, DELTA, LEVEL = 200, 1000, 0.95, 1e-3, 0.001

# name -> (probe parameters, world) for the two sides of the null world
BEYOND_CLIP = {
    "subsampled-gaussian": ({}, {"canary_norm": 10.0}),
    "empty-sample": ({}, {"canary_norm": 10.0}),
}
SAME_LAW = {
    "gaussian": (({}, 0), ({}, 0)),
    "laplace": (({}, 0), ({}, 0)),
    "fts-server": (({"rounds": 10}, 0), ({"rounds": 10}, 0)),
    "pne-reward": (({}, 0), ({"canary_value": 0.0}, 1)),
    "fedzero-scalar": (({}, 0), ({}, 0)),
    "dp-duets-release": (({}, 0), ({}, 0)),
}


def _positives(out, inn, audits=AUDITS) -> int:
    out, inn = out.reshape(audits, TRIALS), inn.reshape(audits, TRIALS)
    return sum(clopper_pearson_lower_bound(o, i, DELTA, CONFIDENCE).epsilon > 0 for o, i in zip(out, inn, strict=True))


def _assert_null(positives: int):
    p = stats.binomtest(positives, AUDITS, 1 - CONFIDENCE, alternative="greater").pvalue
    assert p > LEVEL, f"{positives}/{AUDITS} null audits positive (p = {p:.2g})"


@pytest.mark.parametrize("name", sorted(BEYOND_CLIP))
def test_canary_beyond_the_clip_is_a_null_world(name):
    rng = np.random.default_rng(2027)
    at_bound, beyond = (get_probe(name, **params) for params in BEYOND_CLIP[name])
    out = at_bound.scores(1, AUDITS * TRIALS, rng)
    inn = beyond.scores(1, AUDITS * TRIALS, rng)
    _assert_null(_positives(out, inn))


@pytest.mark.parametrize("name", sorted(SAME_LAW))
def test_worlds_of_one_law_give_positive_bounds_at_most_at_the_nominal_rate(name):
    rng = np.random.default_rng(2028)
    (params_out, world_out), (params_in, world_in) = SAME_LAW[name]
    out = get_probe(name, **params_out).scores(world_out, AUDITS * TRIALS, rng)
    inn = get_probe(name, **params_in).scores(world_in, AUDITS * TRIALS, rng)
    _assert_null(_positives(out, inn))


def dataset_blind(dataset, rng):
    """A user mechanism whose output does not depend on its dataset (Laplace(1) noise)."""
    return rng.laplace(0.0, 1.0)


@pytest.mark.parametrize("classifier", ["logistic", "boosting"])
def test_user_probe_on_a_dataset_blind_mechanism(classifier):
    rng = np.random.default_rng(2029)
    probe = get_probe(
        "user", function="tests.attacks.test_null_worlds_mechanisms:dataset_blind", datasets=DATASETS,
        classifier=classifier,
    ).fit(1000, rng)
    _assert_null(_positives(probe.scores(0, AUDITS * TRIALS, rng), probe.scores(1, AUDITS * TRIALS, rng)))


def test_the_harness_catches_an_unclipped_canary():
    # The same harness on the planted no-clip bug (the canary at 10x the bound is released unclipped):
    # 50 audits, most positive, so the null tests above can fail.
    rng, audits = np.random.default_rng(7), 50
    at_bound = get_probe("subsampled-gaussian", bug="no-clip")
    beyond = get_probe("subsampled-gaussian", bug="no-clip", canary_norm=10.0)
    out, inn = at_bound.scores(1, audits * TRIALS, rng), beyond.scores(1, audits * TRIALS, rng)
    assert _positives(out, inn, audits) > audits * 0.5
