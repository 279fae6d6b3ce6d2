"""Replay of DP-FTS-DE runs along their observed trajectory: the observer of ``FtsEndToEndProbe``'s
``replay`` score.

Unit of privacy: one agent (all of its uploads), add/remove within the declared population (the canary
slot is declared in both worlds and contributes zero when absent). The canary is a malicious agent in
that slot uploading a fixed vector ``v`` every round (world 1) or nothing (world 0).

Threat model (what the observer knows; the guarantee holds conditionally on all of it, since none of it
depends on the canary's own sampling bit or on the mechanism's noise): every broadcast, every other
agent's data (the objective), every other agent's seeds (features, agents', observation and initial
design streams of the run) and the Poisson inclusion bits of every other agent in every round. Under
Poisson sampling those bits are independent of the canary's, so given them each round is still a
subsampled Gaussian in the canary's contribution, with the same privacy analysis. It does NOT know the
canary's inclusion bits or the noise.

What is taken as known data rather than reconstructed: the other agents' uploads. They are deterministic
functions of the agents' data, their seeds and the earlier broadcasts (``dpfed.fts.algorithm``: agents
draw from their own streams; the server's stream, the only one holding sampling and noise, never reaches
them), so re-running the shipped agent code along the observed broadcasts reproduces them bit for bit.
The probe reads them from the same run (``run_fts_batch(record_uploads=True)``);
``tests/attacks/test_fts_end_to_end_replay.py`` re-runs the agents along the recorded broadcasts with
the server replaced by a player of those broadcasts and checks that the uploads are identical. The
inclusion bits are the run's ``sampled`` masks with the canary's column dropped.

Reconstruction, written from the algorithm's description (``shared/notes/seed_dpftsde.md`` 2.2-2.3), not
by calling the server's code: weights ``varphi_n^i(t) = exp(g_t 1[n mod P = i]) / sum_n' (...)`` over
the declared slots with the hold/linear-decay schedule of ``g_t``; each sampled upload clipped to
``S / sqrt(P)``; block ``i`` of round ``t`` is ``(1/q) sum_{n sampled} varphi_n^i(t) clip(u_n)`` plus
noise of standard deviation ``sigma_i(t) = z S max_n varphi_n^i(t) / q``. The observer subtracts the other
agents' reconstructed sum from each broadcast; what is left is ``b_c (1/q) varphi_c^i clip(v)`` plus the
noise, ``b_c`` the canary's bit. The score is the exact log-likelihood ratio of that residual,
``sum_t log[(1-q) + q exp(<y_t, mu_t> - |mu_t|^2 / 2)]`` with ``y_t`` the whitened residual and ``mu_t`` the
whitened clipped canary (``attacks.probes.base.log_mixture_ratio``): the Neyman-Pearson test of the
correct mechanism given the side information, i.e. the server-mechanism probe's score
(``attacks.probes.fts``) on the real runs. A server that deviates from the description changes the
residual's law, never the observer's code: no crash, and for the deviations planted in the tests (less
noise, no clip with the canary beyond the bound, an un-noised broadcast) a stronger score. A release
the description does not make (anything published after the last round) adds ``DEVIATION_SCORE`` times
the canary's share in it (``FtsObserver.extra_release_term``); a correct server publishes nothing, so
the term is then absent.

Exactness: the reconstruction sums in another order than the server, so the residual of world 0 differs
from the noise by floating-point error. Measured on world-0 runs of the probe's default configuration
with the server's noise removed (``benchmarks/fts_replay.py --residual``, 200 runs of 60 rounds): largest
absolute residual 7.1e-15, i.e. 3.4e-15 noise standard deviations (the smallest sigma_i(t) is 2.1).
Validity never depends on exactness: the score is a function of the broadcasts and of side information
independent of the canary's bits and of the noise, so any error only costs power; the null-world tests
(``tests/attacks/test_fts_end_to_end_null_worlds.py``) check it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accounting.mechanisms import array_namespace
from attacks.probes.base import log_mixture_ratio

DEVIATION_SCORE = 1e9  # scale of the term an extra release (one the description does not make) adds


def described_gap(round_index: int, gap: float, hold: int, decay: int) -> float:
    """g_t: ``gap`` for t < hold, then ``gap (1 - k / (decay - 1))`` at t = hold + k (k < decay), then 0."""
    k = int(round_index) - int(hold)
    if k < 0:
        return float(gap)
    return float(gap) * (1.0 - k / (decay - 1)) if decay > 1 and k < decay else 0.0


def described_weights(rounds: int, slots: int, subregions: int, gap: float, hold: int, decay: int) -> np.ndarray:
    """varphi (T, P, slots): softmax of ``g_t 1[n mod P = i]`` over the declared slots; P = 1: 1/slots."""
    member = (np.arange(slots)[None, :] % subregions) == np.arange(subregions)[:, None]  # (P, slots)
    out = np.empty((rounds, subregions, slots))
    for t in range(rounds):
        g = described_gap(t, gap, hold, decay) if subregions > 1 else 0.0
        # exp(g 1[member]) / sum = 1 / (size + (slots - size) e^-g) for members, e^-g times that otherwise
        size = member.sum(axis=1, keepdims=True)
        norm = size + (slots - size) * math.exp(-g)
        out[t] = np.where(member, 1.0, math.exp(-g)) / norm
    return out


def described_clip(vectors, bound: float):
    """``u / max(1, |u| / bound)`` along the last axis (NumPy or a torch tensor, computed where it lives)."""
    xp = array_namespace(None, vectors)
    norms = xp.sqrt(xp.sum(vectors * vectors, axis=-1, keepdims=True))
    return vectors / _at_least(xp, norms / bound, 1.0)


REPLAY_CHUNK = 2048  # runs replayed at once on a device (bounds the clipped copy of their uploads)


@dataclass(frozen=True)
class FtsObserver:
    """The replaying adversary of one probe setting (module docstring). ``weights`` (T, P, slots) from
    ``described_weights``; ``slot`` is the canary's; ``canary`` its upload ``v`` (M,).

    The arrays of a batch may be NumPy or torch tensors (``run_fts_batch(release_on_device=True)``): the
    arithmetic runs where they live, in float64 as on the host, and only the scores come back."""

    rate: float
    noise_multiplier: float
    clip: float  # S, the joint clip; per-vector clip S / sqrt(P)
    weights: np.ndarray
    slot: int
    canary: np.ndarray

    @property
    def per_vector_clip(self) -> float:
        return self.clip / math.sqrt(self.weights.shape[1])

    def noise_std(self) -> np.ndarray:
        """sigma_i(t) = z S max_n varphi_n^i(t) / q, shape (T, P)."""
        return self.noise_multiplier * self.clip * self.weights.max(axis=2) / self.rate

    def others_sum(self, uploads, sampled):
        """(1/q) sum over the sampled other agents of varphi clip(u): (K, T, P, M) from uploads (K, T, slots, M)
        and inclusion bits (K, T, slots); the canary's slot (and any slot past the uploads) is left out."""
        xp = array_namespace(None, uploads)
        slots = uploads.shape[2]
        others = _on(xp, uploads, np.arange(slots) != self.slot)
        bits = _as(xp, sampled[:, :, :slots], xp.bool) & others
        clipped = described_clip(_as(xp, uploads, xp.float64), self.per_vector_clip)
        clipped = clipped * _as(xp, bits, xp.float64)[..., None]
        w = _on(xp, uploads, self.weights[None, :, :, :slots])  # (1, T, P, slots)
        return xp.matmul(w, clipped) / self.rate

    def residuals(self, broadcasts, uploads, sampled):
        """Broadcasts (K, T, P, M) minus the other agents' reconstructed sum: the canary's term plus noise."""
        xp = array_namespace(None, broadcasts)
        return _as(xp, broadcasts, xp.float64) - self.others_sum(uploads, sampled)

    def whitened_shift(self) -> np.ndarray:
        """The canary's whitened contribution when sampled, mu (T, P, M): varphi_c clip(v) / (q sigma)."""
        shift = described_clip(np.asarray(self.canary, dtype=float), self.per_vector_clip)
        scale = self.weights[:, :, self.slot] / self.rate / self.noise_std()  # (T, P)
        return scale[..., None] * shift

    def scores(self, broadcasts, uploads, sampled, final=None) -> np.ndarray:
        """Exact log-likelihood ratio summed over rounds, shape (K,) as NumPy; plus ``extra_release_term``
        when the server published ``final`` (K, P, M) after the last round (the description publishes
        nothing). Device arrays are replayed ``REPLAY_CHUNK`` runs at a time."""
        from attacks.backend import to_numpy

        xp = array_namespace(None, broadcasts)
        if xp is np:
            return self._scores(broadcasts, uploads, sampled, final)
        out = []
        for start in range(0, broadcasts.shape[0], REPLAY_CHUNK):
            part = slice(start, start + REPLAY_CHUNK)
            out.append(to_numpy(self._scores(broadcasts[part], uploads[part], sampled[part],
                                             None if final is None else final[part])))
        return np.concatenate(out)

    def _scores(self, broadcasts, uploads, sampled, final):
        xp = array_namespace(None, broadcasts)
        mu_host = self.whitened_shift()
        mu = _on(xp, broadcasts, mu_host)
        y = self.residuals(broadcasts, uploads, sampled) / _on(xp, broadcasts, self.noise_std())[..., None]
        dot = xp.sum(y * mu, axis=(2, 3))  # (K, T)
        mu_sq = _on(xp, broadcasts, np.sum(mu_host * mu_host, axis=(1, 2)))  # (T,)
        llr = xp.sum(log_mixture_ratio(dot, mu_sq, self.rate), axis=1)
        return llr if final is None else llr + self.extra_release_term(final, uploads)

    def extra_release_term(self, final, uploads):
        """``DEVIATION_SCORE`` times the canary's share ``s`` in an extra release, clipped to [-1, 1]: the
        release minus the other agents' weighted last uploads, projected on the canary's weighted upload
        (s = 1 when that release is the un-noised aggregate with the canary, 0 without it)."""
        xp = array_namespace(None, final)
        slots = uploads.shape[2]
        others = np.arange(slots) != self.slot
        w = self.weights[-1, :, :slots]  # (P, slots)
        last = _as(xp, uploads[:, -1], xp.float64)  # (K, slots, M)
        known = xp.matmul(_on(xp, final, w[:, others]), last[:, _on(xp, final, others)])  # (K, P, M)
        residual = _as(xp, final, xp.float64) - known
        target = w[:, self.slot, None] * np.asarray(self.canary, dtype=float)  # (P, M)
        share = xp.sum(residual * _on(xp, final, target), axis=(1, 2)) / max(float(np.sum(target * target)), 1e-300)
        return DEVIATION_SCORE * _at_most(xp, _at_least(xp, share, -1.0), 1.0)


def _on(xp, like, value):
    """A host constant as an array of ``like``'s namespace and device (NumPy stays NumPy)."""
    if xp is np:
        return value
    return xp.asarray(value, device=like.device)


def _as(xp, value, dtype):
    """``value`` as ``dtype`` in its own namespace (NumPy 1.26 has no ``np.astype``)."""
    return np.asarray(value, dtype=dtype) if xp is np else xp.astype(value, dtype)


def _at_least(xp, value, low: float):
    return np.maximum(value, low) if xp is np else xp.clip(value, min=low)


def _at_most(xp, value, high: float):
    return np.minimum(value, high) if xp is np else xp.clip(value, max=high)
