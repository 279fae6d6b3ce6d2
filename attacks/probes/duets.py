"""DP-DUETS probes (notes A.9 and D). DP-DUETS is our design; the seed's DUETS is not private.

``DuetsReleaseProbe`` (mechanism level): one epoch's release through the very objects the server uses
(``epoch_mechanism`` and ``release_sum``), reduced to the canary's direction. Agent level: a canary
agent whose clipped statistic has the full norm C_j is absent (statistic zero) or present, the other
agents' statistics are known (zero); score: the Neyman-Pearson log-likelihood ratio (mixture for q < 1).
Reward level: one reward flipped from -c_y to +c_y at a point with |z_S(x)| = kappa; score: the release.

``DuetsEndToEndProbe`` (end to end, on the algorithm's own release path): the real algorithm is run with
the same seed in both worlds (coins, observation noise, server draws: shared public randomness); world 1
differs by the canary only: agent level, the canary agent's rewards are 0 (statistic zero: absent from the
sum) or ``canary_scale * c_y`` (the other agents' rewards 0); reward level, one reward of the first epoch at
an inducing point is -+``canary_scale * c_y``. Each batch of trials is ONE ``run_duets`` call per world
with ``mechanism_trials`` = the batch size: the algorithm's own ``communicate`` draws every epoch's release
for every trial, and the probe reads the ``v_bar`` broadcasts of that run. Score: the projection statistic
of A.9 summed over the epochs the canary touches,
``sum_j <A_j v_bar_j - (m0_j + m1_j)/2, m1_j - m0_j> / s_j^2`` (m_w: the world's noise-free clipped sum as
the specification computes it, s_j: the noise std), which for a correct implementation is the
log-likelihood ratio, so the score is exactly Gaussian, N(+-mu^2/2, mu^2) with
mu^2 = sum_j |m1_j - m0_j|^2 / s_j^2, and the GDP route is exact for it.
Agent level needs ``elimination = "off"`` (the privacy claim does not depend on the elimination rule,
which is post-processing, but replay is exact only if the trajectory does not depend on the noise);
reward level uses the first release only, so any elimination rule works. ``private = False`` runs the
non-private DUETS: the scores are then deterministic and the audit reaches the trial ceiling.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number
from accounting.exact import composition_mu, gaussian_epsilon
from accounting.mechanisms import Composition
from attacks.probes.base import Probe, accountant_epsilon, check_world, log_mixture_ratio


def _config(**fields):
    from dpfed.duets.config import DuetsConfig

    return DuetsConfig(**fields)


def audit_mechanism(config=None, delta: float = 1e-5) -> tuple[Composition, float | None]:
    """The composition a DP-DUETS configuration spends (one release per completed epoch of its public
    schedule, or one release at reward level) and its tight epsilon at ``delta`` (closed form for q = 1,
    else PLD). For the audit target of DP-DUETS."""
    from dpfed.duets.private import epoch_mechanism, run_composition
    from dpfed.duets.schedule import completed_epochs, epoch_lengths

    config = config or _config(algorithm="dp-duets")
    if not config.private:
        raise ConfigurationError("algorithm", "only dp-duets releases through a mechanism")
    count = completed_epochs(config.horizon, config.first_epoch)
    if count == 0:
        raise ConfigurationError("horizon", "no epoch completes: nothing is released")
    lengths = epoch_lengths(config.horizon, config.first_epoch)[:count]
    composition = run_composition(config, [epoch_mechanism(config, t) for t in lengths])
    return composition, _tight_epsilon(composition, float(delta))


@functools.lru_cache(maxsize=64)
def _tight_epsilon(composition: Composition, delta: float) -> float | None:
    if all(m.rate == 1.0 for m, _ in composition.parts):
        return gaussian_epsilon(composition_mu(composition), delta)
    return accountant_epsilon(composition, delta, names=("pld", "rdp"))


@dataclass
class DuetsReleaseProbe(Probe):
    """One DP-DUETS epoch release (mechanism level), canary of full norm in a known direction."""

    unit: str = "agent"
    noise_multiplier: float = 1.0
    rate: float = 1.0
    epoch_length: int = 10
    agents: int = 10
    reward_clip: float = 1.0
    agent_clip: str = "public"
    clip_scale: float = 1.0
    delta: float = 1e-5

    name = "dp-duets-release"
    threat_model = "broadcast view"
    description = (
        "DP-DUETS (ours) one epoch's release: agent level, a full-norm canary statistic absent "
        "or present; reward level, one reward flipped -c_y -> +c_y at an inducing point"
    )
    batch_size = 200_000

    def __post_init__(self):
        self.epoch_length = int(require_number("epoch_length", self.epoch_length, low=1, integer=True))
        self.agents = int(require_number("agents", self.agents, low=1, integer=True))
        self.delta = require_number("delta", self.delta, low=0, high=1, low_open=True, high_open=True)
        self._config = _config(
            algorithm="dp-duets",
            unit=self.unit,
            noise_multiplier=self.noise_multiplier,
            rate=self.rate,
            reward_clip=self.reward_clip,
            agent_clip=self.agent_clip,
            clip_scale=self.clip_scale,
            num_agents=self.agents,
        )
        from dpfed.duets.private import epoch_mechanism

        self._mechanism = epoch_mechanism(self._config, self.epoch_length)
        self.default_delta = self.delta
        self.batch_size = max(1, 2_000_000 // self.agents)

    def mechanism(self):
        return self._mechanism

    def true_epsilon(self, delta: float) -> float | None:
        return _tight_epsilon(Composition.of(self._mechanism, 1), float(delta))

    def scores(self, world, trials, rng):
        from dpfed.duets.private import release_sum, released_noise_std

        present, clip = check_world(world), self._mechanism.clip
        contributions = np.zeros((int(trials), self.agents, 1))
        if self.unit == "reward":
            contributions[:, 0, 0] = clip if present else -clip
            return release_sum(self._config, self._mechanism, contributions, rng)[:, 0]
        contributions[:, 0, 0] = clip if present else 0.0
        released = release_sum(self._config, self._mechanism, contributions, rng)[:, 0]
        s = released_noise_std(self._config, self._mechanism)
        mu = clip / self.rate / s
        return log_mixture_ratio(released / s * mu, mu * mu, self.rate)
