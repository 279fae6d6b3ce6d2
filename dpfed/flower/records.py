"""Per-round DP release records inside a ``dpfed.transcript.Transcript``.

One message per noisy release: round ``r``, sender ``"server"``, receiver ``"*"``, name ``RELEASE`` and a
payload with the keys of ``RECORD_KEYS``:

- ``sampled``: ids of the sampled participants; ``population``: how many could have been sampled;
- ``replies``: ids that answered; ``weights``: their aggregation weights (summing to 1);
- ``clip``: the clipping norm applied; ``noise``: the noise actually added (release minus the noiseless
  aggregate, a flat list) and ``noise_std``: its sample standard deviation.

Optional keys (``OPTIONAL_KEYS``; the Flower recorder writes them, older transcripts and ``record_release``
lack them and the checks that need them then skip):

- ``clipping``: ``"server"`` (the server clips the replies) or ``"client"`` (the replies arrive clipped);
- ``norms``: each reply's update norm as it arrived, before any clipping by the recorder, and
  ``norm_slack``: the float32 rounding a norm may carry above the client's clip (one per reply);
- ``noise_clip``: the clipping norm the noise was scaled with (an adaptive wrapper updates its clip
  between clipping and adding the noise; fixed ones: ``clip``);
- ``tensors``: ``[[name, size], ...]`` of the released arrays in the order of ``noise``.

The Flower recorder writes these for a Flower run; ``record_release`` writes them for our own
mechanisms (``accounting.SubsampledGaussian``), so one check reads both.
"""

from __future__ import annotations

import numpy as np

from dpfed.transcript import BROADCAST, SERVER, Transcript

RELEASE = "dp_release"
RECORD_KEYS = ("sampled", "population", "replies", "weights", "clip", "noise", "noise_std")
OPTIONAL_KEYS = ("clipping", "norms", "norm_slack", "noise_clip", "tensors")
CLIPPING_SIDES = ("server", "client")


def add_release(transcript: Transcript, round: int, sampled, population: int, replies, weights, clip: float,
                noise, **optional) -> None:
    """Append one release record (``noise``: the added noise vector, any shape; ``optional``: any of
    ``OPTIONAL_KEYS``)."""
    unknown = set(optional) - set(OPTIONAL_KEYS)
    if unknown:
        raise TypeError(f"add_release: unknown keys {sorted(unknown)}; allowed {OPTIONAL_KEYS}")
    noise = np.asarray(noise, dtype=float).ravel()
    payload = {"sampled": [int(i) for i in sampled], "population": int(population),
               "replies": [int(i) for i in replies], "weights": [float(w) for w in weights],
               "clip": float(clip), "noise": noise.tolist(), "noise_std": float(np.sqrt(np.mean(noise ** 2)))}
    if optional.get("clipping") is not None:
        if optional["clipping"] not in CLIPPING_SIDES:
            raise ValueError(f"add_release: clipping must be one of {CLIPPING_SIDES}, got {optional['clipping']!r}")
        payload["clipping"] = optional["clipping"]
    for key in ("norms", "norm_slack"):
        if optional.get(key) is not None:
            payload[key] = [float(v) for v in optional[key]]
    if optional.get("noise_clip") is not None:
        payload["noise_clip"] = float(optional["noise_clip"])
    if optional.get("tensors") is not None:
        payload["tensors"] = [[str(name), int(size)] for name, size in optional["tensors"]]
        if sum(size for _, size in payload["tensors"]) != noise.size:
            raise ValueError("add_release: the tensors' sizes do not add up to the noise's length")
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
