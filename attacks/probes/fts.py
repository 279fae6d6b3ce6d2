"""DP-FTS-DE server-mechanism probe (``seed_dpftsde.md`` 4.2 and 4.8, crafted-vector canary).

A malicious canary agent sends ``(S / sqrt(P)) u`` every round for a fixed unit direction ``u``; the
other ``agents - 1`` declared agents send known zero vectors (the strongest DP adversary knows them).
The adversary sees the broadcast (all P blocks, every round). Only the projection on ``u`` depends on
the canary, so the release is simulated in that one coordinate, through the very call the DP-FTS-DE
server makes: ``SubsampledGaussian(q, z, S/sqrt(P)).release(uploads, rng, weights=varphi_t, scale=1/q)``.
Score: the Neyman-Pearson log-likelihood ratio summed over rounds,
``sum_t log[(1-q) + q exp(<y_t, mu_t> - |mu_t|^2/2)]`` with ``y_t`` the whitened broadcast and ``mu_t`` the
canary's whitened contribution.

Weights: ``uniform`` (1/N everywhere, every round a subsampled Gaussian at z_eff = z, as the accountant
charges it) or ``reference`` (the reference code's softmax schedule, g_t = 15 for t < 10, linear decay to
0 at t = 39, uniform after, assignment i_n = n mod P): in the early rounds each agent's weight is
concentrated in one block, so its whitened contribution is smaller and the round is effectively a
subsampled Gaussian at ``z_eff,t = z / max_n sqrt(mean_i (varphi_n^i / max_m varphi_m^i)^2)`` (about 2z
for P = 4). The tight epsilon of that heterogeneous composition (about 6.2 at q = 0.35, z = 1, T = 60,
delta = 29^-1.1) is below the epsilon of 60 rounds at z (about 10.4) that the accountant charges.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number
from accounting.mechanisms import Composition, SubsampledGaussian
from attacks.probes.base import Probe, accountant_epsilon, check_world, log_mixture_ratio
from attacks.probes.planted import with_bug

SCHEDULES = ("uniform", "reference")


@functools.lru_cache(maxsize=32)
def _pld_epsilon(composition: Composition, delta: float) -> float | None:
    try:
        from accounting.pld import PldAccountant

        return float(PldAccountant(1e-3).epsilon(composition, delta))
    except Exception:  # noqa: BLE001 - no tight value is a missing annotation, not an attack failure
        return accountant_epsilon(composition, delta, names=("rdp",))


def schedule_weights(
    schedule: str, round_index: int, agents: int, subregions: int, gap: float = 15.0, hold: int = 10, decay: int = 30
) -> np.ndarray:
    """Weights varphi_t of shape (P, N) for the public assignment i_n = n mod P."""
    if schedule == "uniform":
        return np.full((subregions, agents), 1.0 / agents)
    from dpfed.fts.schedules import subregion_weights, weight_gap

    g = weight_gap(round_index, gap, hold, decay)
    return subregion_weights(np.arange(agents) % subregions, subregions, g)


def effective_noise_multiplier(noise_multiplier: float, weights: np.ndarray) -> float:
    """z_eff = z / max_n sqrt(mean_i (w[i, n] / max_m w[i, m])^2) for per-block max noise."""
    ratio = weights / weights.max(axis=1, keepdims=True)
    return float(noise_multiplier / np.sqrt((ratio**2).mean(axis=0)).max())


@dataclass
class FtsServerProbe(Probe):
    """Crafted-canary attack on the DP-FTS-DE server's broadcast (mechanism level)."""

    rate: float = 0.35
    noise_multiplier: float = 1.0
    rounds: int = 60
    agents: int = 29
    subregions: int = 4
    clip_total: float = 1.0
    schedule: str = "uniform"
    canary: int = 1
    gap: float = 15.0
    hold: int = 10
    decay: int = 30
    delta: float = 29.0**-1.1
    bug: str | None = None
    noise_reduction: float = 10.0

    name = "fts-server"
    threat_model = "broadcast view"
    description = (
        "DP-FTS-DE server mechanism; malicious canary agent sends a max-norm vector in a fixed "
        "direction every round, log-likelihood-ratio score over all rounds and blocks"
    )

    def __post_init__(self):
        if self.schedule not in SCHEDULES:
            raise ConfigurationError("schedule", f"choose one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        self.rounds = int(require_number("rounds", self.rounds, low=1, integer=True))
        self.agents = int(require_number("agents", self.agents, low=1, integer=True))
        self.subregions = int(require_number("subregions", self.subregions, low=1, integer=True))
        self.canary = int(require_number("canary", self.canary, low=0, high=self.agents - 1, integer=True))
        self.delta = require_number("delta", self.delta, low=0, high=1, low_open=True, high_open=True)
        clip = require_number("clip_total", self.clip_total, low=0, low_open=True) / np.sqrt(self.subregions)
        self._mechanism = SubsampledGaussian(self.rate, self.noise_multiplier, clip)
        self._implementation = with_bug(self._mechanism, self.bug, self.noise_reduction)
        self._weights = np.stack(
            [
                schedule_weights(self.schedule, t, self.agents, self.subregions, self.gap, self.hold, self.decay)
                for t in range(self.rounds)
            ]
        )
        self.default_delta = self.delta
        self.batch_size = max(1, 300_000 // self.agents)

    def effective_noise_multipliers(self) -> np.ndarray:
        return np.array([effective_noise_multiplier(self.noise_multiplier, w) for w in self._weights])

    def mechanism(self):
        """Per-round subsampled Gaussians at the effective noise multipliers (equal rounds grouped)."""
        z_eff = np.round(self.effective_noise_multipliers(), 12)
        values, counts = np.unique(z_eff, return_counts=True)
        return Composition(
            tuple((SubsampledGaussian(self.rate, float(z), 1.0), int(c)) for z, c in zip(values, counts, strict=True))
        )

    def charged_mechanism(self):
        """What the DP-FTS-DE accountant charges: every round at z."""
        return Composition.of(SubsampledGaussian(self.rate, self.noise_multiplier, 1.0), self.rounds)

    def true_epsilon(self, delta: float) -> float | None:
        """PLD epsilon (discretisation 1e-3, pessimistic) of the effective composition, cached."""
        return _pld_epsilon(self.mechanism(), float(delta))

    def metadata(self, delta=None) -> dict:
        info = super().metadata(delta)
        info["notes"] = (
            "tight epsilon of the per-round effective noise multipliers; the accountant charges "
            "every round at z, which is larger when the schedule concentrates the weights"
        )
        return info

    def scores(self, world, trials, rng):
        present = check_world(world)
        q = self._mechanism.rate
        uploads = np.zeros((int(trials), self.agents, 1))
        if present:
            uploads[:, self.canary, 0] = self._mechanism.clip
        total = np.zeros(int(trials))
        for w in self._weights:
            broadcast = self._implementation.release(uploads, rng, weights=w, scale=1.0 / q)[..., 0]
            sigma = np.asarray(self._mechanism.block_noise_std(w)) / q
            mu = w[:, self.canary] * self._mechanism.clip / q / sigma
            total += log_mixture_ratio((broadcast / sigma) @ mu, float(mu @ mu), q)
        return total
