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
from dpfed.fts.schedules import subregion_weights, weight_gap

FALLBACKS = ("noise", "uniform")


class Server:
    """Aggregates the uploads of one round into P broadcast blocks.

    ``mechanism=None`` gives the non-private FTS / FTS-DE server (weighted sum over all present agents,
    no sampling, clipping or noise). Otherwise every sampling, clipping, weighting and noising step is
    ``mechanism.release(uploads, rng, weights=varphi, scale=1/q)``, whose block noise std is
    ``z * clip * sqrt(P) * max_n varphi[i, n] / q`` = ``z * max_n varphi[i, n] * S / q`` for clip = S/sqrt(P).
    ``empty_sample_fallback='uniform'`` reproduces the reference code's bug (flaw F4): a round with no
    sampled agent broadcasts U[0, 1)^M instead of pure noise. It exists only to be audited.
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
    ):
        if empty_sample_fallback not in FALLBACKS:
            raise ConfigurationError(
                "empty_sample_fallback",
                f"choose one of {', '.join(FALLBACKS)}, got {empty_sample_fallback!r}",
            )
        self.slot_regions = np.asarray(slot_regions)
        self.subregions = int(subregions)
        self.mechanism = mechanism
        self.gap, self.hold, self.decay = float(gap), int(hold), int(decay)
        self.empty_sample_fallback = empty_sample_fallback
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
        """Broadcast blocks (P, M) from ``uploads`` (slots, M) of which ``present`` (slots,) bool take part.

        Returns ``(blocks, mask)``; ``mask`` (slots,) marks the sampled slots (all present slots when
        non-private). Absent slots' rows are ignored (treated as zero vectors).
        """
        uploads = np.where(np.asarray(present)[:, None], np.asarray(uploads, dtype=float), 0.0)
        w = self.weights(round_index)
        if self.mechanism is None:
            return w @ uploads, np.asarray(present, dtype=bool).copy()
        rng = as_generator(rng)
        noisy, mask = self.mechanism.release(
            uploads, rng, weights=w, scale=1.0 / self.mechanism.rate, return_mask=True
        )
        if self.empty_sample_fallback == "uniform" and not np.any(mask & present):
            noisy = rng.random(noisy.shape)
        self.releases += 1
        return noisy, mask & np.asarray(present, dtype=bool)
