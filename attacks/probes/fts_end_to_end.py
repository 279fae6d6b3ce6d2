"""DP-FTS-DE end to end: the real algorithm (``dpfed.fts.run_fts``) with a malicious canary agent among
the real agents, broadcast view.

Both worlds declare one extra slot for the canary (same weights and 1/q); in world 1 the canary uploads
``(S / sqrt(P)) e_1`` every round, in world 0 its slot stays empty. The score is the crafted-canary
log-likelihood ratio of the server-mechanism probe computed from the broadcasts in the transcript,
treating the real agents' (clipped, unknown) contributions as part of the noise; it is a valid score,
just weaker than against known agents. Runs are expensive (a full BO run per trial), so use hundreds of
trials, not 10^5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number
from attacks.probes.base import Probe, check_world, log_mixture_ratio
from attacks.probes.fts import effective_noise_multiplier


@dataclass
class FtsEndToEndProbe(Probe):
    """Crafted canary in a full DP-FTS-DE run; overrides are applied to the preset configuration."""

    preset: str = "synthetic"
    rounds: int = 10
    rate: float | None = None
    noise_multiplier: float | None = None
    candidates: int = 100
    refine_steps: int = 1

    name = "fts-end-to-end"
    threat_model = "broadcast view"
    description = ("DP-FTS-DE end to end: the real algorithm with a malicious canary agent among the real "
                   "agents; log-likelihood-ratio score on the broadcasts")
    batch_size = 20

    def __post_init__(self):
        from dpfed.fts.config import FTSConfig

        changes = {"rounds": int(require_number("rounds", self.rounds, low=1, integer=True)),
                   "candidates": self.candidates, "refine_steps": self.refine_steps}
        if self.rate is not None:
            changes["rate"] = self.rate
        if self.noise_multiplier is not None:
            changes["noise_multiplier"] = self.noise_multiplier
        self._config = FTSConfig.from_preset(self.preset, **changes).with_canary_slot()
        if not self._config.private:
            raise ConfigurationError("preset", f"{self.preset!r} runs a non-private algorithm")
        self.default_delta = self._config.dp_delta
        self._weights = self._schedule()

    def _schedule(self) -> np.ndarray:
        from dpfed.fts.partition import assignment
        from dpfed.fts.server import Server

        c = self._config
        p = c.effective_subregions
        server = Server(assignment(c.declared_population, p), p, c.mechanism(), c.weight_gap, c.weight_hold,
                        c.weight_decay, c.empty_sample_fallback)
        return np.stack([server.weights(t) for t in range(c.rounds)])

    def mechanism(self):
        """Per-round subsampled Gaussians at their effective noise multipliers (as the server probe)."""
        from accounting.mechanisms import Composition, SubsampledGaussian

        c = self._config
        z = np.round([effective_noise_multiplier(c.noise_multiplier, w) for w in self._weights], 12)
        values, counts = np.unique(z, return_counts=True)
        return Composition(tuple((SubsampledGaussian(c.rate, float(v), 1.0), int(k))
                                 for v, k in zip(values, counts, strict=True)))

    def true_epsilon(self, delta: float) -> float | None:
        from attacks.probes.fts import _pld_epsilon

        return _pld_epsilon(self.mechanism(), float(delta))

    def scores(self, world, trials, rng):
        from dpfed.fts.algorithm import run_fts

        c = self._config
        canary = c.num_agents
        clip, q = c.per_vector_clip, c.rate
        vector = np.zeros(c.num_features)
        vector[0] = clip
        out = np.empty(int(trials))
        for k in range(int(trials)):
            result = run_fts(c, rng.spawn(1)[0], canary_vector=vector if check_world(world) else None)
            broadcasts = np.stack([m.payload for m in result.transcript.filter(name="broadcast")])
            sigma = result.block_noise_std  # (T, P)
            y = broadcasts[..., 0] / sigma
            mu = self._weights[:, :, canary] * clip / q / sigma
            out[k] = log_mixture_ratio((y * mu).sum(axis=1), (mu * mu).sum(axis=1), q).sum()
        return out
