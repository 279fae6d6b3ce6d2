"""Algorithm-level planted bugs (outside the mechanism module) are caught end to end, and the correct
algorithms are not flagged.

Budgets are small but certify: against a correct implementation the rigorous Clopper-Pearson bound
exceeds the claim with probability at most 1 - confidence = 1% (validity of the bound), so a "PASS"
check fails falsely with probability <= 1%; seeds are fixed, so each outcome is reproducible.
"""

from __future__ import annotations

import numpy as np
import pytest

from accounting.mechanisms import Gaussian, SubsampledGaussian
from attacks.attack import run_attack
from attacks.probes import get_probe
from dpfed.fts.server import Server
from dpfed.pne.private import RewardPrivatizer
from dpfed.trials import TrialStreams

# Small FTS runs: 20 rounds, z = 10 (claim 0.015 at delta = 29^-1.1); 100 or 60 trials per world.
FTS_SMALL = {"rounds": 20, "noise_multiplier": 10.0}


@pytest.mark.parametrize(
    "bug, overrides, trials",
    [
        ("bug-fts-renormalise-sampled", FTS_SMALL, 100),
        ("bug-fts-unnoised-final-aggregate", FTS_SMALL, 60),
        ("bug-pne-unnoised-final-upload", {}, 150),
        ("bug-pne-noise-shared-across-nodes", {}, 150),
    ],
)
def test_planted_algorithm_bug_caught_and_correct_algorithm_passes(bug, overrides, trials):
    buggy = get_probe(bug, **overrides)
    result = run_attack(buggy, trials, seed=31, confidence=0.99)
    assert result.status == "VIOLATION" and result.best_rigorous() > result.claim_epsilon
    correct = get_probe(bug, **overrides, planted_bug="none")
    result = run_attack(correct, trials, seed=32, confidence=0.99)
    assert result.status == "PASS" and result.best_rigorous() <= result.claim_epsilon


def test_renormalising_server_rescales_by_the_sampled_weight():
    # The planted F2 server multiplies block i by q / sum_{n sampled} varphi[i, n] (computed here from
    # the mask the correct server reports with the same random numbers).
    mech = SubsampledGaussian(0.5, 1.0, clip=1.0)
    uploads = np.random.default_rng(0).standard_normal((3, 6, 4))
    present = np.array([True] * 5 + [False])
    streams = lambda: TrialStreams([np.random.default_rng(s) for s in (1, 2, 3)])  # noqa: E731
    correct = Server(np.arange(6) % 2, 2, mech)
    buggy = Server(np.arange(6) % 2, 2, mech, planted_bug="renormalise-sampled")
    blocks, mask = correct.aggregate(uploads, present, 0, streams())
    bug_blocks, bug_mask = buggy.aggregate(uploads, present, 0, streams())
    np.testing.assert_array_equal(mask, bug_mask)
    weight = mask.astype(float) @ correct.weights(0).T
    expected = np.where(weight > 0, 0.5 / np.where(weight > 0, weight, 1.0), 1.0)
    np.testing.assert_allclose(bug_blocks, blocks * expected[..., None], rtol=1e-12)
    assert correct.final_release(uploads, present, 0) is None
    final = Server(np.arange(6) % 2, 2, mech, planted_bug="unnoised-final-aggregate").final_release(uploads, present, 0)
    np.testing.assert_allclose(final, correct.weights(0) @ np.where(present[:, None], uploads, 0.0))


def test_planted_pne_privatizers_misbehave_as_described():
    mech = Gaussian(2.0)
    rewards = np.random.default_rng(4).uniform(-0.5, 1.5, size=(3, 4, 2))
    clipped = np.clip(rewards, 0, 1)
    shared = RewardPrivatizer(mech, "noise-shared-across-nodes")(rewards, np.random.default_rng(5)) - clipped
    assert np.allclose(shared, shared[:, :1, :1]) and not np.allclose(shared[0], shared[1])
    unnoised = RewardPrivatizer(mech, "unnoised-final-upload")
    np.testing.assert_array_equal(unnoised.final(rewards, np.random.default_rng(6)), clipped)
    assert not np.allclose(RewardPrivatizer(mech).final(rewards, np.random.default_rng(6)), clipped)
