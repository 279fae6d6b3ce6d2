"""Per-round DP release records inside a ``dpfed.transcript.Transcript``.

One message per noisy release: round ``r``, sender ``"server"``, receiver ``"*"``, name ``RELEASE`` and a
payload with the keys of ``RECORD_KEYS``:

- ``sampled``: ids of the sampled participants; ``population``: how many could have been sampled;
- ``replies``: ids that answered; ``weights``: their aggregation weights (summing to 1);
- ``clip``: the clipping norm applied; ``noise``: the noise actually added (release minus the noiseless
  aggregate, a flat list) and ``noise_std``: its sample standard deviation.

The Flower recorder writes these for a Flower run; ``record_release`` writes them for our own
mechanisms (``accounting.SubsampledGaussian``), so one check reads both.
"""

from __future__ import annotations

import numpy as np

from dpfed.transcript import BROADCAST, SERVER, Transcript

RELEASE = "dp_release"
RECORD_KEYS = ("sampled", "population", "replies", "weights", "clip", "noise", "noise_std")


def add_release(transcript: Transcript, round: int, sampled, population: int, replies, weights, clip: float,
                noise) -> None:
    """Append one release record (``noise``: the added noise vector, any shape)."""
    noise = np.asarray(noise, dtype=float).ravel()
    payload = {"sampled": [int(i) for i in sampled], "population": int(population),
               "replies": [int(i) for i in replies], "weights": [float(w) for w in weights],
               "clip": float(clip), "noise": noise.tolist(), "noise_std": float(np.sqrt(np.mean(noise ** 2)))}
    transcript.add(round, SERVER, BROADCAST, RELEASE, payload)


def releases(transcript: Transcript) -> list[tuple[int, dict]]:
    """``(round, payload)`` of every release record, in order."""
    return [(m.round, m.payload) for m in transcript.filter(name=RELEASE)]


def record_release(transcript: Transcript, round: int, mechanism, mask, vectors, rng) -> np.ndarray:
    """Run one release of our ``SubsampledGaussian`` (equal weights, sum then mean over the batch) and
    record it. ``mask``: boolean participation of each of the ``len(vectors)`` participants."""
    mask = np.asarray(mask, dtype=bool)
    clipped = mechanism.clip_vectors(np.asarray(vectors, dtype=float)[mask])
    noiseless = clipped.sum(axis=0)
    noise = np.asarray(rng.normal(0.0, mechanism.noise_std, size=noiseless.shape))
    ids = np.flatnonzero(mask)
    count = max(len(ids), 1)
    add_release(transcript, round, ids, len(mask), ids, np.full(len(ids), 1.0 / count), mechanism.clip,
                noise / count)
    return (noiseless + noise) / count
