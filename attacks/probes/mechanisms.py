"""Mechanism-level probes for the generic mechanisms: Gaussian, Laplace, composed subsampled Gaussian.

Every probe runs the release code of the ``accounting`` mechanism object (or of its planted-bug twin
from ``attacks.probes.planted``), vectorised over the trial axis; the score is the Neyman-Pearson
statistic *for the described mechanism*, which is what an auditor who trusts the description would use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accounting.calibration import calibrate_gaussian
from accounting.errors import require_number
from accounting.exact import gaussian_epsilon
from accounting.mechanisms import Composition, Laplace, Sampling, SubsampledGaussian
from attacks.probes.base import Probe, accountant_epsilon, check_world, log_mixture_ratio
from attacks.probes.planted import with_bug


def _check_delta(delta) -> float:
    return require_number("delta", delta, low=0, high=1, low_open=True, high_open=True)


@dataclass
class GaussianProbe(Probe):
    """Gaussian mechanism calibrated to (epsilon, delta) (or with an explicit noise multiplier) on a
    scalar query of sensitivity ``sensitivity``: world 0 releases 0 + noise, world 1 releases
    sensitivity + noise. The released value itself is the likelihood-ratio score (output-only view)."""

    epsilon: float = 2.0
    delta: float = 1e-5
    noise_multiplier: float | None = None
    sensitivity: float = 1.0
    calibration: str = "analytic"
    bug: str | None = None
    noise_reduction: float = 10.0

    name = "gaussian"
    threat_model = "output only"
    description = "Gaussian mechanism on a scalar query; canary shifts the query by its sensitivity"
    batch_size = 1_000_000

    def __post_init__(self):
        self.delta = _check_delta(self.delta)
        if self.noise_multiplier is None:
            self._mechanism = calibrate_gaussian(self.epsilon, self.delta, self.sensitivity, method=self.calibration)
        else:
            from accounting.mechanisms import Gaussian

            self._mechanism = Gaussian(self.noise_multiplier, self.sensitivity)
        self._implementation = with_bug(self._mechanism, self.bug, self.noise_reduction)
        self.default_delta = self.delta

    def mechanism(self):
        return self._mechanism

    def true_epsilon(self, delta: float) -> float:
        return gaussian_epsilon(1.0 / self._mechanism.noise_multiplier, _check_delta(delta))

    def scores(self, world, trials, rng):
        values = np.full(int(trials), float(self._mechanism.sensitivity) * check_world(world))
        return self._implementation.release(values, rng)


def laplace_epsilon(pure_epsilon: float, delta: float) -> float:
    """Tight epsilon at ``delta`` of the Laplace mechanism with pure epsilon ``pure_epsilon``.

    Its privacy profile is delta(eps) = 1 - exp((eps - eps0) / 2) for 0 <= eps <= eps0 (the hockey-stick
    divergence between two Laplace laws one scale apart), hence eps(delta) = eps0 + 2 log(1 - delta).
    """
    return max(0.0, pure_epsilon + 2.0 * math.log1p(-delta))


@dataclass
class LaplaceProbe(Probe):
    """Laplace mechanism with pure epsilon ``epsilon`` (scale = sensitivity / epsilon) on a scalar query."""

    epsilon: float = 2.0
    delta: float = 1e-5
    sensitivity: float = 1.0
    bug: str | None = None
    noise_reduction: float = 10.0

    name = "laplace"
    threat_model = "output only"
    description = "Laplace mechanism on a scalar query; canary shifts the query by its sensitivity"
    batch_size = 1_000_000

    def __post_init__(self):
        self.delta = _check_delta(self.delta)
        eps = require_number("epsilon", self.epsilon, low=0, low_open=True)
        self._mechanism = Laplace(1.0 / eps, self.sensitivity)
        self._implementation = with_bug(self._mechanism, self.bug, self.noise_reduction)
        self.default_delta = self.delta

    def mechanism(self):
        return self._mechanism

    def true_epsilon(self, delta: float) -> float:
        return laplace_epsilon(1.0 / self._mechanism.noise_multiplier, _check_delta(delta))

    def scores(self, world, trials, rng):
        values = np.full(int(trials), float(self._mechanism.sensitivity) * check_world(world))
        # the likelihood ratio is monotone in the output, clamped outside [0, sensitivity]
        return self._implementation.release(values, rng)


@dataclass
class SubsampledGaussianProbe(Probe):
    """A subsampled Gaussian mechanism composed over ``rounds`` releases, attacked with a crafted canary.

    The canary participant sends ``canary_norm * e_1`` every round (``None`` means exactly the clip);
    ``others`` further participants send known zero vectors. World 0 lacks the canary (add/remove).
    Score: the summed per-round log-likelihood ratio of the described mechanism,
    ``sum_t log[(1-q) + q exp(y_t mu - mu^2/2)]`` on the whitened first coordinate (the other
    coordinates carry no information about the canary under the description).
    """

    rate: float = 0.35
    noise_multiplier: float = 2.0
    rounds: int = 4
    clip: float = 1.0
    canary_norm: float | None = None
    dim: int = 1
    others: int = 0
    sampling: str = "poisson"
    delta: float = 1e-5
    bug: str | None = None
    noise_reduction: float = 10.0

    name = "subsampled-gaussian"
    threat_model = "server view"
    description = (
        "composed subsampled Gaussian; malicious canary sends a max-norm vector every round, likelihood-ratio score"
    )
    batch_size = 100_000

    def __post_init__(self):
        self.delta = _check_delta(self.delta)
        self.rounds = int(require_number("rounds", self.rounds, low=1, integer=True))
        self.dim = int(require_number("dim", self.dim, low=1, integer=True))
        self.others = int(require_number("others", self.others, low=0, integer=True))
        if self.canary_norm is not None:
            require_number("canary_norm", self.canary_norm, low=0, low_open=True)
        population = self.others + 1 if Sampling.parse(self.sampling) is Sampling.FIXED_SIZE else None
        self._mechanism = SubsampledGaussian(
            self.rate, self.noise_multiplier, self.clip, sampling=self.sampling, population=population
        )
        self._implementation = with_bug(self._mechanism, self.bug, self.noise_reduction)
        self.default_delta = self.delta
        self.batch_size = max(1, 400_000 // (self.rounds * (self.others + 1) * self.dim))

    def mechanism(self):
        return Composition.of(self._mechanism, self.rounds)

    def true_epsilon(self, delta: float) -> float | None:
        return accountant_epsilon(self.mechanism(), _check_delta(delta))

    @property
    def participation_rate(self) -> float:
        m = self._mechanism
        return m.rate if m.sampling is Sampling.POISSON else m.batch_size / (self.others + 1)

    def canary_vector(self) -> np.ndarray:
        vector = np.zeros(self.dim)
        vector[0] = self.clip if self.canary_norm is None else self.canary_norm
        return vector

    def views(self, world, trials, rng) -> np.ndarray:
        """Released sums, shape (trials, rounds, dim); participant 0 is the canary."""
        present = check_world(world)  # world 0: the canary is absent, not a zero vector
        contributions = np.zeros((int(trials), self.rounds, self.others + present, self.dim))
        if present:
            contributions[:, :, 0, :] = self.canary_vector()
        return self._implementation.release(contributions, rng)

    def round_log_ratios(self, views: np.ndarray) -> np.ndarray:
        """Per-round log-likelihood ratios (trials, rounds) under the described mechanism."""
        std = self._mechanism.noise_std
        mu = min(float(np.linalg.norm(self.canary_vector())), self._mechanism.clip) / std
        return log_mixture_ratio(views[..., 0] / std * mu, mu * mu, self.participation_rate)

    def scores(self, world, trials, rng):
        return self.round_log_ratios(self.views(world, trials, rng)).sum(axis=-1)


@dataclass
class EmptySampleProbe(SubsampledGaussianProbe):
    """Tiny population (by default only the canary): tests what is released when nobody is sampled.

    Score: the number of rounds whose release leaves the unit cube ``[0, 1)^dim`` (a correct mechanism
    releases Gaussian noise, the reference code's fallback a uniform vector), with the likelihood ratio
    squashed into (0, 0.5) as a tie-breaker.
    """

    rounds: int = 1
    dim: int = 4
    others: int = 0

    name = "empty-sample"
    description = (
        "tiny population; distinguishes pure-noise from uniform-vector releases on an empty "
        "sample (DP-FTS-DE reference-code fallback)"
    )

    def scores(self, world, trials, rng):
        views = self.views(world, trials, rng)
        outside = (~np.all((views >= 0.0) & (views < 1.0), axis=-1)).sum(axis=-1)
        llr = self.round_log_ratios(views).sum(axis=-1)
        return outside + 0.5 / (1.0 + np.exp(-np.clip(llr, -50, 50)))
