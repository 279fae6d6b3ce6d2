"""The subsampled-Gaussian probe's canary vector, weighted releases and single batch axis (issue 29): each score is
the exact log-likelihood ratio of the law the correct release code gives, and each setting sees a release that
differs from its description where the default probe cannot."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from accounting.errors import ConfigurationError
from accounting.mechanisms import SubsampledGaussian
from attacks.probes import get_probe

SETTINGS = {
    "spread canary, one batch axis": {"canary": [-1.5, -1.5, -1.5, -1.5], "clip": 0.5, "noise_multiplier": 1.0,
                                      "rounds": 2, "batch_axes": 1},
    "weighted, canary first": {"weights": [[0.25, 1.0], [0.25, 1.0]], "others": 1, "dim": 2, "rounds": 2,
                               "noise_multiplier": 0.5},
    "weighted, negative, canary second": {"weights": [[1.0, -0.25], [0.5, -0.5]], "others": 1, "canary_index": 1,
                                          "noise_multiplier": 0.5, "rounds": 1, "batch_axes": 1},
    "fixed size, one round": {"sampling": "fixed-size", "rate": 1 / 3, "others": 2, "rounds": 1, "canary_norm": 25.0,
                              "clip": 2.5, "noise_multiplier": 1.0},
}


@pytest.mark.parametrize("params", SETTINGS.values(), ids=SETTINGS.keys())
def test_score_is_the_exact_likelihood_ratio(params):
    # For the exact likelihood ratio L of the released law: E_0[L] = 1 and E_1[1/L] = 1. Mean of 40 000 draws
    # within 5 standard errors: false-failure probability below 1e-6 per check (normal approximation).
    probe = get_probe("subsampled-gaussian", **params)
    rng = np.random.default_rng(3)
    for world, sign in ((0, 1.0), (1, -1.0)):
        ratio = np.exp(sign * probe.scores(world, 40_000, rng))
        assert abs(ratio.mean() - 1.0) < 5 * ratio.std() / math.sqrt(ratio.size)


def test_weighted_effective_noise_multiplier_is_the_closed_form():
    # block i gets noise z * clip * sqrt(k) * max_n |w[i, n]|; the canary's whitened shift at the clip is
    # sqrt(sum_i (w[i, c] / (sqrt(k) max_i))^2) / z: 0.25 / z for weights 1/4 of the other's in both blocks
    probe = get_probe("subsampled-gaussian", weights=[[0.25, 1.0], [0.25, 1.0]], others=1, noise_multiplier=0.25)
    (mechanism, _), = probe.mechanism().parts
    assert mechanism.noise_multiplier == pytest.approx(1.0)
    mixed = get_probe("subsampled-gaussian", weights=[[1.0, 0.5], [0.5, 2.0]], others=1, noise_multiplier=1.0)
    (mechanism, _), = mixed.mechanism().parts
    assert mechanism.noise_multiplier == pytest.approx(1.0 / math.sqrt((1.0 + 0.25**2) / 2))


@dataclasses.dataclass(frozen=True)
class PerCoordinateClip(SubsampledGaussian):
    """A release that clips every coordinate to the clip instead of the vector's norm."""

    def clip_vectors(self, vectors):
        return np.clip(vectors, -self.clip, self.clip)


def test_spread_canary_sees_a_per_coordinate_clip():
    # Rate 1, z = 1, canary (-1.5, -1.5, -1.5, -1.5), clip 0.5: the described whitened shift is mu = 1, so the
    # world-1 score dot - mu^2 / 2 has mean 1/2; clipped per coordinate the canary moves the release by 2 clip,
    # twice along the same direction: mean 2 - 1/2 = 3/2. Standard deviation 1: 20 000 draws, tolerance 0.05
    # (7 standard errors).
    params = dict(SETTINGS["spread canary, one batch axis"], rate=1.0, rounds=1)
    probe = get_probe("subsampled-gaussian", **params)
    correct = probe.scores(1, 20_000, np.random.default_rng(4)).mean()
    probe._implementation = PerCoordinateClip(**{f: getattr(probe._mechanism, f) for f in
                                                 probe._mechanism.__dataclass_fields__})
    per_coordinate = probe.scores(1, 20_000, np.random.default_rng(4)).mean()
    assert correct == pytest.approx(0.5, abs=0.05)
    assert per_coordinate == pytest.approx(1.5, abs=0.05)
    first_coordinate = get_probe("subsampled-gaussian", canary_norm=3.0, clip=0.5, noise_multiplier=1.0, rate=1.0,
                                 rounds=1, dim=4)
    first_coordinate._implementation = probe._implementation
    assert first_coordinate.scores(1, 20_000, np.random.default_rng(4)).mean() == pytest.approx(0.5, abs=0.05)


def test_one_batch_axis_and_two_give_the_same_views_shape():
    for axes in (1, 2):
        probe = get_probe("subsampled-gaussian", weights=[[1.0, 0.5]] * 3, others=1, dim=2, rounds=4, batch_axes=axes)
        assert probe.views(1, 10, np.random.default_rng(0)).shape == (10, 4, 3, 2)


@pytest.mark.parametrize(
    "params, field",
    [
        ({"canary": [1.0, 2.0], "canary_norm": 2.0}, "canary"),
        ({"canary": [0.0, 0.0]}, "canary"),
        ({"canary": [1.0, float("nan")]}, "canary"),
        ({"canary": [[1.0, 2.0]]}, "canary"),
        ({"canary": "ab"}, "canary"),
        ({"canary": [1.0, 2.0], "dim": 3}, "dim"),
        ({"weights": [[1.0, 2.0, 3.0]]}, "weights"),
        ({"weights": [[0.0, 0.0]], "others": 1}, "weights"),
        ({"weights": [[1.0, 1.0]], "others": 1, "sampling": "fixed-size", "rate": 0.5}, "weights"),
        ({"canary_index": 2, "others": 1}, "canary_index"),
        ({"batch_axes": 3}, "batch_axes"),
    ],
)
def test_bad_settings_are_refused_with_the_field(params, field):
    with pytest.raises(ConfigurationError) as caught:
        get_probe("subsampled-gaussian", **params)
    assert caught.value.field == field
