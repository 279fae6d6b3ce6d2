"""Gradient canaries inserted through the user's own private optimizer, for a one-run audit of the training they run.

``LoopCanaries(count, seed)`` draws, before training, each canary's inclusion (a fair coin, Steinke et al. 2023).
At every private step, inside ``DPOptimizer.add_noise`` (``dpfed.dpsgd.observe``), each included canary joins the
batch with the step's Poisson rate q (its own draw) and adds a clipped gradient of norm C (the step's clip) on a flat
coordinate of its own among the optimizer's parameters (chosen at the first step from the seed); opacus then adds its
noise as always. The auditor reads each canary's coordinate of the noisy sum, minus the clipped sum of the other
records there (the white-box adversary of Nasr et al. 2023, who knows every other record and the iterates), and scores
it by the log-likelihood ratio of "present" (a mixture: with probability q the shift C) against "absent" at the
accounted noise std z C, summed over the steps: the Neyman-Pearson statistic of one canary's composed releases, which
uses neither the canary's coin nor its sampling. Canaries need no data: their count is bounded by the coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class LoopCanaries:
    """``count`` canaries seeded ``seed``; ``insert=False`` draws the coins but adds nothing (a null run);
    ``stream``: the stream of the per-step sampling draws (one training of several, e.g. a Flower client's rounds:
    the coins and coordinates follow ``seed`` alone, so they are the same in each, the sampling is fresh)."""

    count: int
    seed: int
    insert: bool = True
    stream: int = 0
    included: np.ndarray = field(init=False)
    scores: np.ndarray = field(init=False)
    steps: int = field(default=0, init=False)
    coordinates: list | None = field(default=None, init=False)
    strict: bool = True  # too few coordinates: raise (else note it in ``refusal`` and add nothing)
    refusal: str | None = field(default=None, init=False)

    def __post_init__(self):
        self.rng = np.random.default_rng([int(self.seed), 0x10C9])
        self.included = self.rng.random(int(self.count)) < 0.5
        self.sampling = np.random.default_rng([int(self.seed), 0x5A3, int(self.stream)])
        self.scores = np.zeros(int(self.count))

    def _place(self, params) -> list:
        """``(parameter index, offset)`` of each canary's coordinate, distinct, drawn once."""
        sizes = np.array([p.numel() for p in params])
        if sizes.sum() < self.count:
            from accounting.errors import ConfigurationError

            self.refusal = (f"{self.count} canaries need as many coordinates; the private optimizer holds "
                            f"{int(sizes.sum())} (use at most that many)")
            if self.strict:
                raise ConfigurationError("canaries", self.refusal)
            return []
        flat = self.rng.choice(int(sizes.sum()), size=self.count, replace=False)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        which = np.searchsorted(starts, flat, side="right") - 1
        return [(int(i), int(f - starts[i])) for i, f in zip(which, flat, strict=True)]

    def before_noise(self, params, clip: float, rate: float) -> np.ndarray:
        """Add the sampled, included canaries' gradients; returns the clean values at their coordinates."""
        import torch

        if self.coordinates is None:
            self.coordinates = self._place(params)
        if self.refusal is not None:
            return np.zeros(0)
        clean = np.array([float(params[i].summed_grad.reshape(-1)[o]) for i, o in self.coordinates])
        joins = self.included & (self.sampling.random(self.count) < rate) & self.insert
        for k in np.flatnonzero(joins):
            i, o = self.coordinates[k]
            with torch.no_grad():
                params[i].summed_grad.view(-1)[o] += clip
        return clean

    def after_noise(self, params, clean: np.ndarray, std: float, clip: float, rate: float) -> None:
        """Score each canary's observation (noisy minus clean) at its coordinate."""
        if self.refusal is not None:
            return
        noisy = np.array([float(params[i].grad.reshape(-1)[o]) for i, o in self.coordinates])
        observed = noisy - clean
        shift = (clip * observed - clip ** 2 / 2) / std ** 2
        self.scores += np.logaddexp(np.log1p(-rate), np.log(rate) + shift) if rate < 1 else shift
        self.steps += 1
