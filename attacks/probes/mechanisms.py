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
from accounting.errors import ConfigurationError, require_number
from accounting.exact import gaussian_epsilon
from accounting.mechanisms import Composition, Laplace, Sampling, SubsampledGaussian
from attacks.probes.base import (
    Probe,
    accountant_epsilon,
    backend_array,
    backend_full,
    check_world,
    log_mixture_ratio,
)
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
    backends = ("numpy", "torch")
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
        values = backend_full(rng, (int(trials),), float(self._mechanism.sensitivity) * check_world(world))
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
    backends = ("numpy", "torch")
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
        values = backend_full(rng, (int(trials),), float(self._mechanism.sensitivity) * check_world(world))
        # the likelihood ratio is monotone in the output, clamped outside [0, sensitivity]
        return self._implementation.release(values, rng)


@dataclass
class SubsampledGaussianProbe(Probe):
    """A subsampled Gaussian mechanism composed over ``rounds`` releases, attacked with a crafted canary.

    The canary participant sends ``canary`` (a vector; by default ``canary_norm * e_1``, and ``None`` for
    the norm means exactly the clip) every round; ``others`` further participants send known zero vectors.
    World 0 lacks the canary (add/remove). Score: the summed per-round log-likelihood ratio of the
    described mechanism, ``sum_t log[(1-q) + q exp(<y_t, mu> - |mu|^2/2)]``, with ``y_t`` the whitened
    release and ``mu`` the canary's whitened clipped contribution (every coordinate and block it moves).

    Two settings exercise more of the release path than one participant's first coordinate:

    - ``weights`` (k rows of ``others + 1`` public weights, the canary's column at ``canary_index``): the
      weighted release of the DP-FTS-DE server, block i = sum_n w[i, n] x_n plus noise of standard
      deviation ``z * clip * sqrt(k) * max_n |w[i, n]|``. The canary's slot then stays in world 0 with a
      zero vector (public weights do not change with the data), and sampling must be Poisson.
    - ``batch_axes = 1``: the trials and rounds go to the release call as one batch axis, shape
      (trials * rounds, participants, dim), instead of two (the default); the release must treat any
      number of leading axes as independent releases.
    """

    rate: float = 0.35
    noise_multiplier: float = 2.0
    rounds: int = 4
    clip: float = 1.0
    canary_norm: float | None = None
    dim: int | None = None
    others: int = 0
    sampling: str = "poisson"
    delta: float = 1e-5
    bug: str | None = None
    noise_reduction: float = 10.0
    canary: list | None = None
    canary_index: int = 0
    weights: list | None = None
    batch_axes: int = 2

    name = "subsampled-gaussian"
    backends = ("numpy", "torch")
    threat_model = "server view"
    description = (
        "composed subsampled Gaussian; malicious canary sends a max-norm vector every round, likelihood-ratio score"
    )
    batch_size = 100_000

    def __post_init__(self):
        self.delta = _check_delta(self.delta)
        self.rounds = int(require_number("rounds", self.rounds, low=1, integer=True))
        self.others = int(require_number("others", self.others, low=0, integer=True))
        self.canary_index = int(
            require_number("canary_index", self.canary_index, low=0, high=self.others, integer=True)
        )
        self.batch_axes = int(require_number("batch_axes", self.batch_axes, low=1, high=2, integer=True))
        if self.canary_norm is not None:
            require_number("canary_norm", self.canary_norm, low=0, low_open=True)
        self._canary = self._check_canary()
        self.dim = len(self._canary)
        self._weights = self._check_weights()
        population = self.others + 1 if Sampling.parse(self.sampling) is Sampling.FIXED_SIZE else None
        self._mechanism = SubsampledGaussian(
            self.rate, self.noise_multiplier, self.clip, sampling=self.sampling, population=population
        )
        if self._weights is not None and self._mechanism.sampling is not Sampling.POISSON:
            raise ConfigurationError("weights", "a weighted release is attacked under Poisson sampling only")
        self._implementation = with_bug(self._mechanism, self.bug, self.noise_reduction)
        self.default_delta = self.delta
        blocks = 1 if self._weights is None else len(self._weights)
        self.batch_size = max(1, 400_000 // (self.rounds * (self.others + 1 + blocks) * self.dim))

    def _check_canary(self) -> np.ndarray:
        """The canary's vector: ``canary`` as given (finite, not all zero; ``dim``, if given, its length), else
        ``canary_norm * e_1`` in ``dim`` coordinates (default 1)."""
        dim = None if self.dim is None else int(require_number("dim", self.dim, low=1, integer=True))
        if self.canary is None:
            dim = 1 if dim is None else dim
            vector = np.zeros(dim)
            vector[0] = self.clip if self.canary_norm is None else self.canary_norm
            return vector
        if self.canary_norm is not None:
            raise ConfigurationError("canary", "give the canary's vector or its norm (canary_norm), not both")
        try:
            vector = np.asarray(self.canary, dtype=float)
        except (TypeError, ValueError):
            raise ConfigurationError("canary", f"expected a list of numbers, got {self.canary!r}") from None
        if vector.ndim != 1 or not len(vector) or not np.all(np.isfinite(vector)) or not np.any(vector):
            raise ConfigurationError("canary", f"expected a non-zero list of finite numbers, got {self.canary!r}")
        if dim is not None and dim != len(vector):
            raise ConfigurationError("dim", f"{dim} does not match the canary's {len(vector)} coordinates")
        return vector

    def _check_weights(self) -> np.ndarray | None:
        """The release weights, shape (k, others + 1), finite, every row with a non-zero weight; or None."""
        if self.weights is None:
            return None
        try:
            weights = np.asarray(self.weights, dtype=float)
        except (TypeError, ValueError):
            raise ConfigurationError("weights", f"expected rows of numbers, got {self.weights!r}") from None
        participants = self.others + 1
        if weights.ndim != 2 or weights.shape[1] != participants or not np.all(np.isfinite(weights)):
            raise ConfigurationError(
                "weights", f"expected rows of {participants} finite numbers (the canary and the others)"
            )
        if not np.all(np.abs(weights).max(axis=1) > 0):
            raise ConfigurationError("weights", "every row needs a non-zero weight")
        return weights

    def mechanism(self):
        """The composition the worlds release: at the canary's effective noise multiplier when weighted."""
        if self._weights is None:
            return Composition.of(self._mechanism, self.rounds)
        mu = math.sqrt(self._shift_per_unit_clip())
        return Composition.of(SubsampledGaussian(self.rate, self.noise_multiplier / mu, 1.0), self.rounds)

    def true_epsilon(self, delta: float) -> float | None:
        return accountant_epsilon(self.mechanism(), _check_delta(delta))

    @property
    def participation_rate(self) -> float:
        m = self._mechanism
        return m.rate if m.sampling is Sampling.POISSON else m.batch_size / (self.others + 1)

    def canary_vector(self) -> np.ndarray:
        return self._canary.copy()

    def _block_std(self) -> np.ndarray:
        """The described noise standard deviation per block (one entry when unweighted), not the code's."""
        std = float(self.noise_multiplier) * float(self.clip)
        if self._weights is None:
            return np.array([std])
        return std * math.sqrt(len(self._weights)) * np.abs(self._weights).max(axis=1)

    def _shift_per_unit_clip(self) -> float:
        """|mu|^2 / (z^-2) for a canary at the clip: sum_i (w[i, c] / (sqrt(k) max_n |w[i, n]|))^2."""
        w = self._weights
        return float(np.sum((w[:, self.canary_index] / (math.sqrt(len(w)) * np.abs(w).max(axis=1))) ** 2))

    def _score_coefficients(self) -> tuple[np.ndarray, float]:
        """(c, |mu|^2): the whitened projection <y, mu> is ``views . c`` over the last (block and) coordinate
        axes, for the canary clipped to ``clip`` as the description says."""
        canary = self._canary * min(1.0, float(self.clip) / float(np.linalg.norm(self._canary)))
        std = self._block_std()
        weights = np.ones((1, 1)) if self._weights is None else self._weights[:, self.canary_index, None]
        mu = weights * canary[None, :] / std[:, None]  # (blocks, dim)
        coefficients = mu / std[:, None]
        if self._weights is None:
            coefficients, mu = coefficients[0], mu[0]
        return coefficients, float(np.sum(mu * mu))

    def views(self, world, trials, rng) -> np.ndarray:
        """Released sums, shape (trials, rounds, [blocks,] dim); participant ``canary_index`` is the canary."""
        present = check_world(world)  # world 0: the canary is absent (weighted: its slot sends a zero vector)
        weighted = self._weights is not None
        participants = self.others + (1 if weighted else present)
        batch = (int(trials), self.rounds) if self.batch_axes == 2 else (int(trials) * self.rounds,)
        contributions = backend_full(rng, batch + (participants, self.dim))
        if present:
            contributions[..., self.canary_index, :] = backend_array(rng, self._canary)
        weights = None if not weighted else self._weights
        released = self._implementation.release(contributions, rng, weights)
        return released.reshape((int(trials), self.rounds) + tuple(released.shape[len(batch):]))

    def round_log_ratios(self, views: np.ndarray) -> np.ndarray:
        """Per-round log-likelihood ratios (trials, rounds) under the described mechanism."""
        coefficients, mu_sq = self._score_coefficients()
        flat = views.reshape(tuple(views.shape[:2]) + (-1,))
        from accounting.mechanisms import array_namespace

        xp = array_namespace(None, views)
        coefficients = coefficients.reshape(-1)
        if xp is not np:
            coefficients = xp.asarray(coefficients, dtype=xp.float64, device=views.device)
        dot = flat @ coefficients
        return log_mixture_ratio(dot, mu_sq, self.participation_rate)

    def scores(self, world, trials, rng):
        from accounting.mechanisms import array_namespace

        ratios = self.round_log_ratios(self.views(world, trials, rng))
        return array_namespace(rng, ratios).sum(ratios, axis=-1)


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
    backends = ("numpy",)
    description = (
        "tiny population; distinguishes pure-noise from uniform-vector releases on an empty "
        "sample (DP-FTS-DE reference-code fallback)"
    )

    def scores(self, world, trials, rng):
        views = self.views(world, trials, rng)
        outside = (~np.all((views >= 0.0) & (views < 1.0), axis=-1)).sum(axis=-1)
        llr = self.round_log_ratios(views).sum(axis=-1)
        return outside + 0.5 / (1.0 + np.exp(-np.clip(llr, -50, 50)))
