"""The DP-FTS-DE server: weights, and the one subsampled Gaussian release per round.

Privacy model (central DP, trusted server): the unit of privacy is one agent slot. The server knows a
*declared* population of slots and the public assignment of each slot to a sub-region; the weights
``varphi`` and the ``1/q`` scaling are computed from the declared population only (flaw F2 of the
notes). Agents that are absent (e.g. the canary slot in the "out" world) contribute a zero vector.
Consequence for add/remove neighbours: adding or removing one agent *within the declared population*
changes the weighted sum by at most one clipped, weighted record, so the accountants' analysis of the
subsampled Gaussian applies. If weights were instead renormalised over the agents actually present,
a removal would shift every other agent's weight and the add/remove guarantee would not hold.
"""

from __future__ import annotations

import numpy as np

from accounting.errors import ConfigurationError
from accounting.mechanisms import SubsampledGaussian, as_generator
from dpfed.arrays import like, namespace_of
from dpfed.fts.schedules import subregion_weights, weight_gap

FALLBACKS = ("noise", "uniform")
# Deliberate implementation bugs, each existing only to be audited (see ``Server``):
PLANTED_BUGS = ("none", "renormalise-sampled", "unnoised-final-aggregate")


class Server:
    """Aggregates the uploads of one round into P broadcast blocks, for one run or a batch of runs.

    ``mechanism=None`` gives the non-private FTS / FTS-DE server (weighted sum over all present agents,
    no sampling, clipping or noise). Otherwise every sampling, clipping, weighting and noising step is
    ``mechanism.release(uploads, rng, weights=varphi, scale=1/q)``, whose block noise std is
    ``z * clip * sqrt(P) * max_n varphi[i, n] / q`` = ``z * max_n varphi[i, n] * S / q`` for clip = S/sqrt(P).

    Planted bugs (they exist only to be audited; the accountants still analyse the correct mechanism):

    * ``empty_sample_fallback='uniform'``: the reference code's bug (flaw F4): a round with no sampled
      agent broadcasts U[0, 1)^M instead of pure noise;
    * ``planted_bug='renormalise-sampled'`` (flaw F2): each block is rescaled by ``q / W_i`` with
      ``W_i = sum_{n sampled} varphi[i, n]``, i.e. the weights are renormalised over the agents sampled
      in the round (an average of the sampled vectors) instead of the declared population; the factor
      depends on who was sampled, so the broadcast's scale reveals the sample;
    * ``planted_bug='unnoised-final-aggregate'``: after the last round the server also publishes the
      final model, the non-private weighted aggregate of the last uploads (no sampling, clipping or
      noise), as if the run's output were not a release.
    """

    def __init__(
        self,
        slot_regions,
        subregions: int,
        mechanism: SubsampledGaussian | None = None,
        gap: float = 15.0,
        hold: int = 10,
        decay: int = 30,
        empty_sample_fallback: str = "noise",
        planted_bug: str = "none",
    ):
        if empty_sample_fallback not in FALLBACKS:
            raise ConfigurationError(
                "empty_sample_fallback",
                f"choose one of {', '.join(FALLBACKS)}, got {empty_sample_fallback!r}",
            )
        if planted_bug not in PLANTED_BUGS:
            raise ConfigurationError("planted_bug", f"choose one of {', '.join(PLANTED_BUGS)}, got {planted_bug!r}")
        self.slot_regions = np.asarray(slot_regions)
        self.subregions = int(subregions)
        self.mechanism = mechanism
        self.gap, self.hold, self.decay = float(gap), int(hold), int(decay)
        self.empty_sample_fallback = empty_sample_fallback
        self.planted_bug = planted_bug
        self.releases = 0

    @property
    def num_slots(self) -> int:
        return int(self.slot_regions.shape[0])

    def weights(self, round_index: int) -> np.ndarray:
        """varphi at aggregation round ``round_index`` (0-based), shape (P, slots); P = 1 gives 1/slots."""
        g = weight_gap(round_index, self.gap, self.hold, self.decay) if self.subregions > 1 else 0.0
        return subregion_weights(self.slot_regions, self.subregions, g)

    def block_noise_std(self, round_index: int) -> np.ndarray:
        """Per-block noise std of the broadcast at ``round_index`` (zeros without a mechanism)."""
        if self.mechanism is None:
            return np.zeros(self.subregions)
        w = self.weights(round_index)
        return np.asarray(self.mechanism.block_noise_std(w)) / self.mechanism.rate

    def aggregate(self, uploads, present, round_index: int, rng):
        """Broadcast blocks (..., P, M) from ``uploads`` (..., slots, M) of which ``present`` (slots,) take part.

        A leading batch axis holds independent runs (``rng`` a ``dpfed.trials.TrialStreams`` over it).
        Returns ``(blocks, mask)``; ``mask`` (..., slots) marks the sampled present slots (all present
        slots when non-private). Absent slots' rows are ignored (treated as zero vectors). ``uploads`` may
        be an array of another backend (``dpfed.arrays``; ``rng`` then draws onto it): so are the outputs.
        """
        xp = namespace_of(uploads)
        present = like(uploads, present, dtype=xp.bool)
        uploads = xp.where(present[:, None], xp.asarray(uploads, dtype=xp.float64), 0.0)
        w = self._weights_like(uploads, round_index)
        if self.mechanism is None:
            return w @ uploads, xp.asarray(xp.broadcast_to(present, uploads.shape[:-1]), copy=True)
        rng = as_generator(rng)
        noisy, mask = self.mechanism.release(uploads, rng, weights=w, scale=1.0 / self.mechanism.rate, return_mask=True)
        mask = mask & present
        if self.empty_sample_fallback == "uniform":
            noisy = _uniform_when_empty(noisy, ~xp.any(mask, axis=-1), rng)
        if self.planted_bug == "renormalise-sampled":
            sampled_weight = xp.astype(mask, xp.float64) @ like(uploads, w).mT  # (..., P)
            factor = xp.where(sampled_weight > 0, self.mechanism.rate / xp.clip(sampled_weight, min=1e-300), 1.0)
            noisy = noisy * factor[..., None]
        self.releases += 1
        return noisy, mask

    def final_release(self, uploads, present, round_index: int):
        """What the server publishes after the last round: nothing (None), except under the planted bug
        ``unnoised-final-aggregate`` (the non-private aggregate of ``uploads``, shape (..., P, M))."""
        if self.planted_bug != "unnoised-final-aggregate":
            return None
        xp = namespace_of(uploads)
        present = like(uploads, present, dtype=xp.bool)
        return like(uploads, self.weights(round_index)) @ xp.where(present[:, None], uploads, 0.0)

    def preload_weights(self, reference, rounds: int) -> None:
        """Copy the weights of round indices 0..rounds-1 to ``reference``'s device in one transfer, so that
        the rounds of a batched run on a GPU copy nothing from the host (NumPy: nothing to do)."""
        if namespace_of(reference) is np:
            return
        stacked = like(reference, np.stack([self.weights(t) for t in range(int(rounds))]))
        cache = self.__dict__.setdefault("_device_weights", {})
        for t in range(int(rounds)):
            cache[(t, str(reference.device))] = stacked[t]

    def _weights_like(self, uploads, round_index: int):
        """``weights(round_index)``: NumPy for NumPy uploads, else on the uploads' device (preloaded, or
        copied once per round index and device)."""
        xp = namespace_of(uploads)
        if xp is np:
            return self.weights(round_index)
        cache = self.__dict__.setdefault("_device_weights", {})
        key = (round_index, str(uploads.device))
        if key not in cache:
            cache[key] = like(uploads, self.weights(round_index))
        return cache[key]


def _uniform_when_empty(noisy, empty, rng):
    """Replace the release of every run whose sample is empty by U[0, 1) draws of that run's stream."""
    xp = namespace_of(noisy)
    if getattr(rng, "draws_on_device", False):  # one draw for every run, kept where empty: no synchronisation
        return xp.where(empty[..., None, None], rng.random(tuple(noisy.shape)), noisy)
    if not bool(xp.any(empty)):
        return noisy
    if hasattr(rng, "subset"):  # a TrialStreams (dpfed.trials), or one drawing onto a device (dpfed.arrays)
        noisy = xp.asarray(noisy, copy=True)
        noisy[empty] = rng.subset(empty).random((int(xp.sum(xp.astype(empty, xp.int64))),) + tuple(noisy.shape[1:]))
        return noisy
    return rng.random(tuple(noisy.shape))
