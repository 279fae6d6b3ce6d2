"""DP-FKM: our private variants of FKM (notes C.5 and D; the seed has no privacy).

**Event level** (default). Private data: the loss sequence; neighbours differ in one loss ``f_s`` (any
value). The only data-dependent quantity of round s is the scalar ``f_s(y_s)``: it is clipped to
``[-B, B]`` and released once through ``accounting.Gaussian(sigma, sensitivity=2B)`` (noise std
``2 B sigma``). Each loss enters exactly one release and every later round is adaptive post-processing
of independent data, so the whole run is as private as ONE Gaussian mechanism (mu = 1/sigma): no
composition over rounds, ``composition() == Composition.of(mechanism, 1)``.

**Dataset level.** FKM as stochastic optimisation over N records (round loss = mean record loss):
each round Poisson-samples records at rate q, clips each record's value to ``[-B, B]``, sums and adds
``N(0, (sigma B)^2)`` (``accounting.SubsampledGaussian``, add/remove one record), then rescales by
``1/(q N)``; T such releases compose: ``Composition.of(mechanism, T)``.

Utility: the learner is tuned with the root-mean-square bound of what it observes
(``B sqrt(1 + 4 sigma^2)`` at event level), so the bound grows by ``(1 + 4 sigma^2)^(1/4)`` (C.5).
"""

from __future__ import annotations

import math

import numpy as np

from accounting.calibration import calibrate_gaussian
from accounting.exact import gaussian_epsilon
from accounting.mechanisms import Composition, Gaussian, SubsampledGaussian
from dpfed.fkm.algorithm import FKMRun, SequenceFeedback, make_losses, run_fkm
from dpfed.fkm.config import FKMConfig
from dpfed.fkm.losses import SyntheticLosses
from dpfed.release import repeated_release_epsilon
from dpfed.streams import named_generator, seed_sequence

UNITS = ("event", "dataset")


class EventLevelFeedback(SequenceFeedback):
    """Round t's loss, clipped to [-B, B] and released through one ``Gaussian`` (event-level DP)."""

    def __init__(self, losses: SyntheticLosses, mechanism: Gaussian):
        super().__init__(losses)
        self.mechanism = mechanism

    @property
    def feedback_bound(self) -> float:
        """sqrt(E observed^2) <= B sqrt(1 + 4 sigma^2)."""
        return self.losses.bound * math.hypot(1.0, 2.0 * self.mechanism.noise_multiplier)  # no overflow at 1e300

    def observe(self, t, points, rng):
        value = self.losses.value(t, points)
        bound = self.losses.bound
        return value, self.mechanism.release(np.clip(value, -bound, bound), rng)

    def composition(self, horizon: int) -> Composition:
        return Composition.of(self.mechanism, 1)


class DatasetFeedback:
    """FKM over a dataset of records: the round loss is the records' mean, observed through one
    ``SubsampledGaussian`` release per round (Poisson sampling, clip B, rescaled by 1/(q N))."""

    def __init__(self, records: SyntheticLosses, mechanism: SubsampledGaussian):
        self.losses = records
        self.mechanism = mechanism

    @property
    def feedback_bound(self) -> float:
        """sqrt(E observed^2) <= B sqrt(1 + 1/(qN) + sigma^2/(qN)^2)."""
        qn, sigma = self.mechanism.rate * self.losses.count, self.mechanism.noise_multiplier
        try:
            return self.losses.bound * math.sqrt(1.0 + 1.0 / qn + sigma**2 / qn**2)
        except (OverflowError, ZeroDivisionError):  # (qn)^2 underflows for a rate like 1e-300
            return self.losses.bound * math.hypot(1.0, math.sqrt(1.0 / qn), sigma / qn)

    def observe(self, t, points, rng):
        values = self.losses.values_all(points)  # (runs, N)
        noisy = self.mechanism.release(values[..., None], rng)[..., 0]
        return values.mean(axis=-1), noisy / (self.mechanism.rate * self.losses.count)

    def comparator_losses(self, horizon: int) -> np.ndarray:
        best = self.losses.best_fixed_point()
        return np.full(horizon, float(self.losses.values_all(best).mean()))

    def composition(self, horizon: int) -> Composition:
        return Composition.of(self.mechanism, horizon)


def event_mechanism(
    config: FKMConfig, epsilon: float | None = None, delta: float = 1e-5, noise_multiplier: float | None = None
) -> Gaussian:
    """The event-level Gaussian (sensitivity 2B of the clipped loss), calibrated exactly to
    (epsilon, delta) unless ``noise_multiplier`` is given."""
    bound = make_losses(config, 0, count=1).bound
    if noise_multiplier is not None:
        return Gaussian(noise_multiplier, 2.0 * bound)
    return calibrate_gaussian(epsilon if epsilon is not None else 1.0, delta, sensitivity=2.0 * bound)


def event_release_epsilon(mechanism: Gaussian, delta: float) -> tuple[Gaussian, float]:
    """The event-level release and its tight epsilon at ``delta`` (the whole run: one Gaussian,
    mu = 1/sigma); for the integrator's audit target."""
    return mechanism, gaussian_epsilon(1.0 / mechanism.noise_multiplier, delta)


#: (Composition of T SGM releases, its tight epsilon at delta): the dataset-level release of one record
dataset_release_epsilon = repeated_release_epsilon


def run_dp_fkm(
    config: FKMConfig,
    seed=None,
    *,
    unit: str = "event",
    mechanism=None,
    records: int = 200,
    rate: float = 0.1,
    noise_multiplier: float = 1.0,
    canary: dict | None = None,
    **kwargs,
) -> FKMRun:
    """Run DP-FKM. ``unit="event"``: ``mechanism`` (default ``event_mechanism(config)``, epsilon 1 at
    delta 1e-5). ``unit="dataset"``: ``records`` records, ``SubsampledGaussian(rate, noise_multiplier,
    clip=B)`` unless ``mechanism`` is given. ``canary`` maps a round (event) or record index (dataset)
    to a constant loss value. Other keywords go to ``run_fkm``."""
    from accounting.errors import ConfigurationError

    if unit not in UNITS:
        raise ConfigurationError("unit", f"unknown {unit!r}; choose one of {', '.join(UNITS)}")
    seed = seed_sequence(seed)
    losses_rng = named_generator(seed, "losses")
    if unit == "event":
        losses = make_losses(config, losses_rng)
        mechanism = mechanism or event_mechanism(config)
        feedback = EventLevelFeedback(losses.with_constants(canary or {}), mechanism)
    else:
        losses = make_losses(config, losses_rng, count=records)
        mechanism = mechanism or SubsampledGaussian(rate, noise_multiplier, clip=losses.bound)
        feedback = DatasetFeedback(losses.with_constants(canary or {}), mechanism)
    return run_fkm(config, seed, feedback=feedback, algorithm=f"dp-fkm ({unit} level)", **kwargs)


def dp_fkm_release(
    config: FKMConfig,
    delta: float,
    unit: str = "event",
    epsilon: float | None = None,
    noise_multiplier: float | None = None,
    rate: float = 0.1,
):
    """For an audit target: what a DP-FKM run of ``config`` releases about one unit and its tight epsilon
    at ``delta``: one event-level Gaussian (``event_mechanism``), or T subsampled Gaussians with clip B."""
    if unit == "event":
        return event_release_epsilon(event_mechanism(config, epsilon, delta, noise_multiplier), delta)
    bound = make_losses(config, 0, count=1).bound
    sigma = 1.0 if noise_multiplier is None else noise_multiplier
    return dataset_release_epsilon(SubsampledGaussian(rate, sigma, clip=bound), config.horizon, delta)
