"""What the accountant assumed about a run, and the epsilons the transcript checks compare with it.

``Assumptions`` states the accountant's model: the sampling scheme and its rate or batch, the population,
the number of releases, the noise multiplier ``z`` (noise std ``z * C / m`` on the mean of ``m`` clipped
updates, i.e. ``z * C`` on their sum) and the clipping norm ``C``, with equal weights ``1/m``. For adaptive
clipping (Andrew et al. 2021, Flower's adaptive wrappers) ``z`` is the combined multiplier of the update and
the clipped count; the update itself carries the larger ``update_noise_multiplier`` ``z_u`` and the count
the std ``sigma_b``, with ``z^-2 = z_u^-2 + (2 sigma_b)^-2``, and the clip changes every round.

Fixed-size sampling is accounted under replace-one (sensitivity 2C, what Flower's sampler has an analysis
for), Poisson under add/remove (sensitivity C), as ``dpfed.flower.config`` does.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from accounting.base import run_accountant
from accounting.errors import ConfigurationError, require_number
from accounting.mechanisms import Composition, Gaussian, Neighbouring, Sampling, SubsampledGaussian
from accounting.registry import get_accountant

SAMPLINGS = ("fixed-size", "poisson")
UPPER_ACCOUNTANT = {"fixed-size": "dpa-rdp", "poisson": "pld"}  # as dpfed.flower.config's rows


@dataclass(frozen=True)
class Assumptions:
    """The accountant's model of the run (``sampling``: ``fixed-size`` or ``poisson``); ``adaptive``: the clip
    changes every round (its noise is checked against each round's clip); ``update_noise_multiplier``: z_u of
    an adaptive run (default ``noise_multiplier``); ``delta``: where epsilons are compared; ``claimed_epsilon``:
    the user's claim at ``delta``, if any (a deviation is critical when it can raise epsilon above the claim: this
    one, else the accounted epsilon)."""

    sampling: str
    population: int
    sampled: int
    releases: int
    noise_multiplier: float
    clip: float
    adaptive: bool = False
    update_noise_multiplier: float | None = None
    delta: float = 1e-5
    claimed_epsilon: float | None = None

    def __post_init__(self):
        if self.sampling not in SAMPLINGS:
            raise ConfigurationError("sampling", f"unknown sampling {self.sampling!r}; choose fixed-size or poisson")
        require_number("population", self.population, low=1, integer=True)
        require_number("sampled", self.sampled, low=1, high=self.population, integer=True)
        require_number("releases", self.releases, low=1, integer=True)
        require_number("noise_multiplier", self.noise_multiplier, low=0, low_open=True)
        require_number("clip", self.clip, low=0, low_open=True)
        require_number("delta", self.delta, low=0, high=1, low_open=True, high_open=True)
        if not isinstance(self.adaptive, bool):
            raise ConfigurationError("adaptive", f"expected true or false, got {self.adaptive!r}")
        if self.claimed_epsilon is not None:
            require_number("claimed_epsilon", self.claimed_epsilon, low=0, low_open=True)
        if self.update_noise_multiplier is not None:
            require_number("update_noise_multiplier", self.update_noise_multiplier,
                           low=self.noise_multiplier * (1 - 1e-9))  # z_u >= z, up to rounding

    @property
    def noise_std(self) -> float:
        """Std the accountant assumes on the mean of ``sampled`` updates (at the clip ``clip``)."""
        return self.noise_multiplier * self.clip / self.sampled

    @property
    def update_z(self) -> float:
        """The multiplier of the noise on the update (z_u; z for fixed clipping)."""
        return self.noise_multiplier if self.update_noise_multiplier is None else self.update_noise_multiplier

    def round_noise_std(self, payload: dict) -> float:
        """Std the noise of one release should have: z_u C_t / m with the clip the noise was scaled with in an
        adaptive run, z C / m with the accounted C otherwise."""
        if not self.adaptive:
            return self.noise_std
        return self.update_z * float(payload.get("noise_clip", payload["clip"])) / self.sampled

    @property
    def count_std(self) -> float:
        """sigma_b of an adaptive run's clipped count (inf: no count released)."""
        rest = self.noise_multiplier ** -2 - self.update_z ** -2
        return 0.5 / math.sqrt(rest) if rest > 0 else math.inf

    def combined_z(self, update_z: float) -> float:
        """The combined multiplier of a release whose update noise has multiplier ``update_z``."""
        sigma_b = self.count_std
        return update_z if math.isinf(sigma_b) else (update_z ** -2 + (2.0 * sigma_b) ** -2) ** -0.5

    @property
    def sensitivity_factor(self) -> float:
        """One client's L2 sensitivity in units of C: 2 (replace-one, fixed-size) or 1 (add/remove, Poisson)."""
        return 2.0 if self.sampling == "fixed-size" else 1.0

    def release(self, z: float) -> SubsampledGaussian:
        """One accounted release at multiplier ``z``."""
        rate = self.sampled / self.population
        if self.sampling == "fixed-size":
            return SubsampledGaussian(rate, z, self.clip, sampling=Sampling.FIXED_SIZE,
                                      neighbouring=Neighbouring.REPLACE_ONE, population=self.population)
        return SubsampledGaussian(rate, z, self.clip)

    def accounted_epsilon(self) -> float:
        """The accountant's epsilon of the run: ``releases`` sampled releases at z (an upper bound)."""
        return accounted_epsilon(self.sampling, self.population, self.sampled, self.releases, self.noise_multiplier,
                                 self.clip, self.delta)

    def claim(self) -> tuple[float, str]:
        """The epsilon a deviation is measured against, and its name: the user's claim, else the accounted one."""
        if self.claimed_epsilon is not None:
            return float(self.claimed_epsilon), "claimed"
        return self.accounted_epsilon(), "accounted"

    def rounds_epsilon(self, multipliers) -> float:
        """Epsilon of sampled releases at the per-round multipliers ``multipliers`` (same accountant)."""
        counts: dict[float, int] = {}
        for z in multipliers:
            counts[float(z)] = counts.get(float(z), 0) + 1
        composition = Composition(tuple((self.release(z), c) for z, c in sorted(counts.items())))
        return epsilon_of(composition, UPPER_ACCOUNTANT[self.sampling], self.delta)

    def participation_epsilon(self, count: int) -> float:
        """Epsilon of one client included in ``count`` releases, with no amplification by sampling: ``count``
        Gaussians of multiplier z over its sensitivity (closed form, ``exact``). A client whose inclusions are
        not the accounted random draw (a fixed or re-seeded sampler) spends this."""
        if count <= 0:
            return 0.0
        mechanism = Gaussian(self.noise_multiplier / self.sensitivity_factor, 1.0)
        return epsilon_of(Composition.of(mechanism, int(count)), "exact", self.delta)


@functools.lru_cache(maxsize=32)
def accounted_epsilon(sampling, population, sampled, releases, noise_multiplier, clip, delta) -> float:
    """Cached: our RDP accountant takes seconds on fixed-size sampling, and several checks ask."""
    a = Assumptions(sampling, population, sampled, releases, noise_multiplier, clip)
    return epsilon_of(Composition.of(a.release(noise_multiplier), releases), UPPER_ACCOUNTANT[sampling], delta)


def epsilon_of(composition: Composition, accountant: str, delta: float) -> float:
    result = run_accountant(get_accountant(accountant), composition, delta=delta)
    if not result.ok:
        raise ConfigurationError("accountant", f"{accountant} cannot account this run: {result.reason}")
    return float(result.epsilon)


def assumptions_from_config(config, delta: float = 1e-5, update_noise_multiplier: float | None = None,
                            claimed_epsilon: float | None = None) -> Assumptions:
    """What the corrected accounting assumes a Flower setting (``FlowerDpConfig``) runs: fixed-size m of N, z,
    C, one release a round; adaptive wrappers: the clip of each round, z_u on the update."""
    adaptive = config.kind.endswith("adaptive")
    z_u = update_noise_multiplier if update_noise_multiplier is not None else getattr(
        config, "update_noise_multiplier", None)
    return Assumptions("fixed-size", config.nodes, config.sampled, config.rounds, config.noise_multiplier, config.clip,
                       adaptive=adaptive, update_noise_multiplier=z_u if adaptive else None, delta=delta,
                       claimed_epsilon=claimed_epsilon)
