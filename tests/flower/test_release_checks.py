"""The new transcript checks on synthetic transcripts (no flwr): their nulls are not anti-conservative, and each
finds its deviation.

Null calibration: 100 correct transcripts (fixed-size sampling of 8 of 40, 12 rounds, Gaussian noise of the
accounted std in two tensors) checked at a loose alpha = 0.2; each check kind may fire in at most alpha of them
in expectation (Bonferroni makes it less). The test fails if a kind fires in more than 20 + 4 sd = 36 of 100
(sd = sqrt(100 * 0.2 * 0.8) = 4), which an exactly calibrated test does with probability below 1e-4. Seeds
are fixed, so the outcome does not vary between runs.
"""

import numpy as np
import pytest

from attacks.flower_checks.assumptions import Assumptions
from attacks.flower_checks.release_checks import check_noise_correlation, check_noise_parts, check_reply_norms
from attacks.flower_checks.sampler_check import check_inclusions, check_overlaps, consecutive_overlap_p
from attacks.flower_checks.transcript_check import check_transcript
from dpfed.flower.records import add_release, releases
from dpfed.transcript import Transcript

N, M, ROUNDS, Z, C = 40, 8, 12, 1.0, 1.0
TENSORS = [("w", 300), ("b", 10)]
DIM = sum(size for _, size in TENSORS)
ASSUMED = Assumptions("fixed-size", N, M, ROUNDS, Z, C)


def transcript(seed, noise=None, sampler=None, norms=None):
    """A correct run's records, unless ``noise(rng, round)``, ``sampler(rng, round)`` or ``norms`` say otherwise."""
    rng = np.random.default_rng(seed)
    out = Transcript()
    for r in range(1, ROUNDS + 1):
        ids = sampler(rng, r) if sampler else rng.choice(N, size=M, replace=False)
        vector = noise(rng, r) if noise else rng.normal(0, Z * C / M, DIM)
        add_release(out, r, ids, N, ids, np.full(M, 1 / M), C, vector, clipping="client",
                    norms=norms if norms is not None else rng.uniform(0.2, 1.0, M), norm_slack=np.full(M, 1e-6),
                    noise_clip=C, tensors=TENSORS)
    return out


@pytest.mark.slow  # 100 transcripts, 4 checks each (about 10 s)
def test_null_rates_are_at_most_alpha():
    alpha, fired = 0.2, {"correlation": 0, "parts": 0, "inclusions": 0, "overlaps": 0}
    for seed in range(100):
        records = releases(transcript(seed))
        fired["correlation"] += bool(check_noise_correlation(records, alpha))
        fired["parts"] += bool(check_noise_parts(records, ASSUMED, alpha))
        fired["inclusions"] += bool(check_inclusions(records, ASSUMED, alpha))
        fired["overlaps"] += bool(check_overlaps(records, ASSUMED, alpha))
    assert max(fired.values()) <= 36, fired


def test_correct_transcript_passes_and_keeps_its_optional_keys_through_json():
    again = Transcript.from_dict(transcript(0).to_dict())
    payload = releases(again)[0][1]
    assert payload["clipping"] == "client" and payload["tensors"] == [["w", 300], ["b", 10]]
    assert check_transcript(again, ASSUMED) == []


def test_consecutive_overlap_distribution_is_exact():
    """The p-value of the sum of 5 consecutive overlaps against 20000 simulated fixed-size samplers: at three
    observed sums, P[sum >= observed] from the convolution and the simulated frequency agree within 0.015 (the
    simulation's standard error is at most 0.0036)."""
    rng = np.random.default_rng(5)
    ranks = np.argsort(np.argsort(rng.random((20000, 6, N)), axis=2), axis=2)
    member = ranks < M  # each (simulation, round): a uniform subset of M of the N clients
    sims = np.sum(member[:, 1:] & member[:, :-1], axis=(1, 2))
    for observed in (6, 9, 12):  # mean 5 * 8 * 8 / 40 = 8
        rounds = [(0, set(range(M)), N)]
        for r in range(1, 6):  # each round shares a chosen number of clients with the previous one
            share = observed // 5 + (r <= observed % 5)
            previous = sorted(rounds[-1][1])
            fresh = [i for i in range(N) if i not in rounds[-1][1]][r * 2:][:M - share]
            rounds.append((r, set(previous[:share]) | set(fresh), N))
        p_value, total, _ = consecutive_overlap_p(rounds)
        assert total == observed
        assert p_value == pytest.approx(np.mean(sims >= observed), abs=0.015)


def test_half_shared_noise_is_found():
    shared = np.random.default_rng(9).normal(0, Z * C / M, DIM)
    found = check_transcript(transcript(1, noise=lambda rng, r: (shared + rng.normal(0, Z * C / M, DIM)) / np.sqrt(2)),
                             ASSUMED)
    assert {f.code for f in found} == {"noise-correlated"}


def test_a_block_of_a_tensor_without_noise_is_found():
    def noise(rng, r):
        vector = rng.normal(0, Z * C / M, DIM)
        vector[64:96] = 0.0  # one block of the weight tensor
        return vector

    found = [f for f in check_transcript(transcript(2, noise=noise), ASSUMED) if f.code == "noise-part-below-accounted"]
    blocks = [f.values["parts_below"] for f in found if f.values["kind"] == "block"]
    assert blocks == [["block w[64:96]"]]  # the tensor w as a whole may be found too (32 of its 300 numbers)


def test_sampler_favouring_some_clients_is_found_at_low_expected_counts():
    """Clients 0-3 in every round, 4 others at random: expected count 12 * 0.2 = 2.4, below the old test's 5."""
    def sampler(rng, r):
        return np.r_[np.arange(4), 4 + rng.choice(N - 4, M - 4, replace=False)]

    found = {f.code: f for f in check_transcript(transcript(3, sampler=sampler), ASSUMED)}
    assert "sampler-not-uniform" in found
    assert found["sampler-not-uniform"].values["most_inclusions"] == ROUNDS
    assert found["sampler-not-uniform"].severity == "critical"  # 12 unamplified rounds spend more than accounted


def test_reply_norms_only_matter_for_client_side_clipping():
    records = releases(transcript(4, norms=np.r_[1.3, np.full(M - 1, 0.5)]))
    found = check_reply_norms(records, ASSUMED)
    assert found[0].values["largest_norm"] == pytest.approx(1.3) and found[0].values["replies_over"] == ROUNDS
    for _, p in records:
        p["clipping"] = "server"  # the server clips: a large reply is expected
    assert check_reply_norms(records, ASSUMED) == []


def test_claimed_epsilon_sets_the_severity():
    """A sampler deviation whose realised epsilon stays below a generous claim is HIGH, not CRITICAL."""
    def sampler(rng, r):
        return np.r_[np.arange(4), 4 + rng.choice(N - 4, M - 4, replace=False)]

    records = releases(transcript(3, sampler=sampler))
    loose = Assumptions("fixed-size", N, M, ROUNDS, Z, C, claimed_epsilon=1e6)
    found = check_inclusions(records, loose, 1e-3)
    assert found[0].severity == "high" and found[0].values["claim"] == "claimed"


def test_add_release_refuses_unknown_keys_and_wrong_tensor_sizes():
    with pytest.raises(TypeError):
        add_release(Transcript(), 1, [0], 2, [0], [1.0], 1.0, [0.0], colour="red")
    with pytest.raises(ValueError):
        add_release(Transcript(), 1, [0], 2, [0], [1.0], 1.0, [0.0, 0.0], tensors=[("w", 3)])
