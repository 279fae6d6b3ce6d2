"""Transcript check on transcripts of our own mechanism (``accounting.SubsampledGaussian``): the correct run
passes, each planted deviation is found. No flwr needed.

False-failure probability of the passing case: each check kind is a test at level alpha = 1e-3
(Bonferroni over rounds), so at most ~3e-3 under the null; the seeds are fixed.
"""

import numpy as np
import pytest

from accounting.mechanisms import SubsampledGaussian
from attacks.flower_checks.transcript_check import Assumptions, check_transcript
from dpfed.flower.records import add_release, record_release, releases
from dpfed.transcript import Transcript

N, M, ROUNDS, Z, C, DIM = 40, 8, 30, 1.0, 1.0, 200


def our_run(seed=0, noise_factor=1.0, skip_round=None, sampling="fixed-size"):
    """A run of our SubsampledGaussian over ROUNDS rounds, its releases recorded."""
    rng = np.random.default_rng(seed)
    mechanism = SubsampledGaussian(M / N, Z * noise_factor, C, sampling=sampling, population=N)
    transcript = Transcript()
    vectors = rng.normal(size=(N, DIM))
    for r in range(1, ROUNDS + 1):
        mask = mechanism.sample(rng, N)
        if r == skip_round:
            ids = np.flatnonzero(mask)
            add_release(transcript, r, ids, N, ids, np.full(len(ids), 1 / len(ids)), C, np.zeros(DIM))
        else:
            record_release(transcript, r, mechanism, mask, vectors, rng)
    return transcript


ASSUMED = Assumptions("fixed-size", N, M, ROUNDS, Z, C)


def codes(findings):
    return {f.code for f in findings}


def test_correct_run_passes_and_round_trips_json():
    transcript = our_run()
    assert check_transcript(transcript, ASSUMED) == []
    again = Transcript.from_dict(transcript.to_dict())
    assert check_transcript(again, ASSUMED) == []
    assert len(releases(again)) == ROUNDS


@pytest.mark.parametrize("planted, expected", [
    (dict(noise_factor=0.8), "noise-below-accounted"),
    (dict(skip_round=7), "noise-below-accounted"),
    (dict(sampling="poisson"), "sampling-scheme"),
])
def test_planted_deviations_are_found(planted, expected):
    findings = check_transcript(our_run(seed=1, **planted), ASSUMED)
    assert expected in codes(findings)
    assert any(f.severity == "critical" for f in findings)


def test_skipped_round_is_named():
    findings = [f for f in check_transcript(our_run(seed=2, skip_round=7), ASSUMED)
                if f.code == "noise-below-accounted"]
    assert [f.values["round"] for f in findings] == [7]


def test_unequal_weights_release_count_and_clip():
    transcript = our_run(seed=3)
    weights = np.r_[0.3, np.full(M - 1, 0.7 / (M - 1))]
    add_release(transcript, ROUNDS + 1, range(M), N, range(M), weights, 2 * C,
                np.random.default_rng(4).normal(0, Z * C / M, DIM))
    found = codes(check_transcript(transcript, ASSUMED))
    assert {"unequal-weights", "release-count", "clip"} <= found


def test_poisson_assumption_rejects_fixed_size_transcript():
    poisson = Assumptions("poisson", N, M, ROUNDS, Z, C)
    assert "sampling-scheme" in codes(check_transcript(our_run(seed=5), poisson))
    assert "sampling-scheme" not in codes(check_transcript(our_run(seed=5, sampling="poisson"), poisson))


def test_non_finite_noise_is_a_critical_finding():
    """A release that overflowed (noise inf or nan) is not the Gaussian the accountant assumed; nan compares false,
    so the chi-square test alone passed it."""
    transcript = our_run()
    noise = np.r_[np.full(3, np.nan), np.inf, np.zeros(DIM - 4)]
    add_release(transcript, ROUNDS + 1, range(M), N, range(M), np.full(M, 1 / M), C, noise)
    found = [f for f in check_transcript(transcript, Assumptions("fixed-size", N, M, ROUNDS + 1, Z, C))
             if f.code == "noise-not-finite"]
    assert [(f.severity, f.values["round"]) for f in found] == [("critical", ROUNDS + 1)]
    assert "4 of 200" in found[0].message


def test_empty_transcript_is_a_finding():
    assert codes(check_transcript(Transcript(), ASSUMED)) == {"no-releases"}
