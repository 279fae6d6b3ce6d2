"""The ``replay`` score of ``fts-end-to-end`` (``attacks.probes.fts_replay``): what the observer takes from
the run equals re-running the agents, its reconstruction of the server matches the server to
floating-point error, and its scores follow the server-mechanism probe's law (issue 16)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from attacks.probes import get_probe
from attacks.probes.fts import FtsServerProbe
from attacks.probes.fts_end_to_end import REPLAY_THREAT_MODEL, FtsEndToEndProbe
from dpfed.fts.algorithm import run_fts_batch
from dpfed.fts.server import Server
from tests.attacks.test_matrix_fts import BUGS


def _runs(probe, seed: int, runs: int, world: int, **options):
    """``runs`` runs from fresh seed sequences of ``seed`` (spawning changes a sequence: never reuse one)."""
    canary = probe._canary_vector() if world else None
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(runs)]
    return run_fts_batch(probe._config, rngs, objective=probe.objective(), canary_vector=canary, **options)


def test_replay_is_the_default_score_and_names_its_threat_model():
    probe = get_probe("fts-end-to-end", rounds=2)
    assert probe.score == "replay"
    assert probe.metadata(probe.default_delta)["threat_model"] == REPLAY_THREAT_MODEL
    assert get_probe("fts-end-to-end", rounds=2, score="canary").threat_model == "broadcast view"


def test_recorded_uploads_are_what_the_agents_compute_along_the_observed_broadcasts(monkeypatch):
    # Re-run the agents of world-1 runs along their recorded broadcasts, the canary absent and the server
    # replaced by a player of those broadcasts that never touches the server's stream: the other agents'
    # uploads come out bit for bit the same (so they are functions of their data, their seeds and the
    # broadcasts; neither the canary's own uploads nor the server's randomness reach them directly).
    probe = FtsEndToEndProbe(rounds=6)
    first = _runs(probe, 5, 3, 1, record_uploads=True)

    def playback(self, uploads, present, round_index, rng):
        self.releases += 1
        return first.broadcasts[:, round_index].copy(), first.sampled[:, round_index].copy()

    monkeypatch.setattr(Server, "aggregate", playback)
    again = _runs(probe, 5, 3, 0, record_uploads=True)
    agents = probe._config.num_agents
    assert np.array_equal(again.uploads[:, :, :agents], first.uploads[:, :, :agents])


@pytest.mark.parametrize("world", [0, 1])
def test_reconstruction_matches_an_unnoised_server_to_floating_point_error(monkeypatch, world):
    # Without the server's noise the residual is the canary's clipped, weighted, 1/q-scaled upload when it
    # was sampled (world 1) and zero otherwise: the description's weights, clip, 1/q and noise std match
    # the server's code to floating-point error (benchmarks/fts_replay.py --residual: 7.1e-15 at most).
    monkeypatch.setattr(Server, "aggregate", BUGS["unnoised-broadcast"])
    probe = FtsEndToEndProbe(rounds=12, canary_norm=10.0)
    batch = _runs(probe, 9, 4, world, record_uploads=True)
    observer = probe._observer
    residual = observer.residuals(batch.broadcasts, batch.uploads, batch.sampled)
    slot, q = probe._config.num_agents, probe._config.rate
    clipped = np.zeros(probe._config.num_features)
    clipped[0] = probe._config.per_vector_clip  # the 10x canary, clipped
    bits = batch.sampled[:, :, slot] if world else np.zeros(batch.sampled.shape[:2], dtype=bool)
    expected = bits[:, :, None, None] * observer.weights[None, :, :, slot, None] / q * clipped
    assert np.abs(residual - expected).max() < 1e-12
    assert world == 0 or bits.any()
    np.testing.assert_allclose(observer.noise_std(), batch.block_noise_std, rtol=1e-12)


def test_replay_scores_follow_the_server_probes_law():
    # The end-to-end replay on the real algorithm against the matched server-mechanism probe (same
    # schedule, 30 declared slots, canary in slot 29), 10 rounds: two-sample Kolmogorov-Smirnov per world.
    # Both sample the same law when the reconstruction is exact, so each test fails with probability
    # 1e-3 (both: 2e-3); a replay that missed a term of the others' sum or the canary's shift fails.
    probe = FtsEndToEndProbe(rounds=10)
    server = FtsServerProbe(rounds=10, agents=30, canary=29, schedule="reference", delta=probe.default_delta)
    rng = np.random.default_rng(16)
    for world in (0, 1):
        ours, theirs = probe.scores(world, 300, rng), server.scores(world, 20_000, rng)
        assert stats.ks_2samp(ours, theirs).pvalue > 1e-3, world


def test_an_extra_unnoised_release_separates_the_worlds():
    # The server's planted `unnoised-final-aggregate` publishes the un-noised aggregate after the last
    # round, a release the description does not make: the replay's extra-release term is 1e9 with the
    # canary and 0 without it (exact up to floating-point error), whatever the rounds' noise.
    from attacks.probes.fts_replay import DEVIATION_SCORE

    probe = FtsEndToEndProbe(rounds=3, planted_bug="unnoised-final-aggregate")
    rng = np.random.default_rng(3)
    out, inn = probe.scores(0, 4, rng), probe.scores(1, 4, rng)
    assert np.all(np.abs(out) < 100) and np.all(inn > DEVIATION_SCORE - 100)


def test_the_replay_on_device_tensors_equals_the_replay_of_the_same_arrays_on_the_host():
    # On torch the probe keeps a batch's releases on the device (run_fts_batch(release_on_device=True)) and
    # replays there, chunk by chunk; the scores must be the NumPy observer's on the same arrays (float64 on
    # both sides: only the order of the sums differs), extra-release term included.
    torch = pytest.importorskip("torch")
    import attacks.probes.fts_replay as replay

    probe = FtsEndToEndProbe(rounds=4)
    batch = _runs(probe, 11, 5, 1, record_uploads=True, backend="torch", device="cpu", release_on_device=True)
    assert isinstance(batch.broadcasts, torch.Tensor) and isinstance(batch.uploads, torch.Tensor)
    final = batch.broadcasts[:, -1]  # stands in for a release the description does not make
    host = [t.numpy() for t in (batch.broadcasts, batch.uploads, batch.sampled, final)]
    observer = probe._observer
    for extra in (None, final):
        on_host = observer.scores(*host[:3], None if extra is None else host[3])
        original = replay.REPLAY_CHUNK
        try:
            replay.REPLAY_CHUNK = 2  # three chunks of a batch of five
            on_device = observer.scores(batch.broadcasts, batch.uploads, batch.sampled, extra)
        finally:
            replay.REPLAY_CHUNK = original
        assert isinstance(on_device, np.ndarray) and on_device.shape == (5,)
        np.testing.assert_allclose(on_device, on_host, rtol=1e-12, atol=1e-9)
