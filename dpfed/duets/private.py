"""DP-DUETS: OUR differentially private variant of DUETS (notes A.9). The seed has no privacy.

What is private: only the rewards. Query points come from the agents' coins, which the server knows
(A.3), so points, sigma_{j,max}, p_j, S_j and Z^T Z are public; the agent set and their coins are
public too. The only data-dependent releases are the per-epoch sums of the agents' statistics
``v_j^(n) = Z_n^T clip(Y_n)`` (rewards clipped to [-c_y, c_y]); the server (trusted, central DP) releases
one noisy sum per completed epoch, and v_bar, mu~, the elimination and all later queries are
post-processing.

Units (``config.unit``):

- ``agent`` (default): neighbouring runs differ in one agent's whole reward record (add/remove: its
  statistic present or zero; replace-one optional). Epoch j runs ``SubsampledGaussian(q, z, C_j)``
  (Poisson sample of agents at rate q, clip each v_j^(n) to C_j, sum, add N(0, z^2 C_j^2 I), scale 1/q).
  ``C_j`` is public: ``agent_clip = "public"`` is the data-independent bound of A.9,
  ``|v_j^(n)| <= c_y kappa T_j`` (so clipping never binds), ``"sqrt"`` is ``clip_scale c_y kappa sqrt(T_j)``
  (clipping may bind). The run composes one release per completed epoch: ``composition()`` lists them.
- ``reward``: neighbouring runs differ in one reward (replace-one). Each per-reward contribution
  ``z_S(x_i) clip(y_i)`` has norm <= c_y kappa (A.2), so the epoch sum has sensitivity 2 c_y kappa and
  gets ``N(0, z^2 c_y^2 kappa^2 I)`` from ``SubsampledGaussian(1, z, c_y kappa, replace-one).add_noise``.
  Every reward enters exactly one epoch's release, so by (adaptive) parallel composition the whole run
  is one such release: ``composition() == Composition.of(mechanism, 1)``.

Utility correction (A.9): the noise moves mu~(x) by ``e(x) ~ N(0, s^2 |A^{-1} z_S(x)|^2)`` with s the
released sum's noise std; the elimination threshold is widened by
``2 s sup_x |A^{-1} z(x)| sqrt(2 log(2 |U| J / noise_delta))`` (J: completed epochs, |U|: candidates),
computed from public quantities only.
"""

from __future__ import annotations

import math

import numpy as np

from accounting.mechanisms import Composition, Neighbouring, SubsampledGaussian
from dpfed.duets.config import DuetsConfig
from dpfed.duets.surrogate import KAPPA


def agent_clip_bound(config: DuetsConfig, epoch_length: int) -> float:
    """Public clip C_j of one agent's statistic in an epoch of ``epoch_length`` queries."""
    if config.agent_clip == "public":
        return config.reward_clip * KAPPA * epoch_length
    return config.clip_scale * config.reward_clip * KAPPA * math.sqrt(epoch_length)


def epoch_mechanism(config: DuetsConfig, epoch_length: int) -> SubsampledGaussian:
    """The mechanism the server runs at the end of an epoch of ``epoch_length`` queries per agent."""
    if config.unit == "reward":
        return SubsampledGaussian(
            1.0, config.noise_multiplier, config.reward_clip * KAPPA, neighbouring=Neighbouring.REPLACE_ONE
        )
    return SubsampledGaussian(
        config.rate,
        config.noise_multiplier,
        agent_clip_bound(config, epoch_length),
        neighbouring=config.neighbouring_relation,
    )


def release_sum(config: DuetsConfig, mechanism: SubsampledGaussian, statistics: np.ndarray, rng) -> np.ndarray:
    """The private release of sum_n v_n: ``statistics`` (..., N, r) -> noisy sum (..., r).

    Agent level: ``mechanism.release`` (sample, clip, sum, noise, scale 1/q). Reward level: the per-reward
    contributions are bounded by construction, ``mechanism.add_noise`` adds the noise to the exact sum.
    """
    if config.unit == "reward":
        return mechanism.add_noise(np.asarray(statistics).sum(axis=-2), rng)
    return mechanism.release(statistics, rng, scale=1.0 / mechanism.rate)


def released_noise_std(config: DuetsConfig, mechanism: SubsampledGaussian) -> float:
    """Standard deviation of the noise per coordinate of the released (rescaled) sum."""
    scale = 1.0 if config.unit == "reward" else 1.0 / mechanism.rate
    return mechanism.noise_std * scale


def noise_widening(config: DuetsConfig, noise_std: float, max_gain: float, epochs: int) -> float:
    """Extra elimination margin 2 s sup|A^{-1} z| sqrt(2 log(2 |U| J / noise_delta)) (A.9)."""
    if not config.noise_correction:
        return 0.0
    log_term = math.log(2.0 * config.candidates * max(epochs, 1) / config.noise_delta)
    return 2.0 * noise_std * max_gain * math.sqrt(2.0 * log_term)


def run_composition(config: DuetsConfig, mechanisms: list[SubsampledGaussian]) -> Composition | None:
    """What a run spent: one release per completed epoch (agent level) or one release (reward level)."""
    if not mechanisms:
        return None
    if config.unit == "reward":
        return Composition.of(mechanisms[0], 1)
    return Composition(tuple((m, 1) for m in mechanisms))
