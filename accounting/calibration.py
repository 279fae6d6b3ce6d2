"""Noise calibration for a target (epsilon, delta), conservative on the stated side, and checks of
calibration formulas against the exact privacy profile."""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import optimize

from accounting.errors import ConfigurationError, require_number
from accounting.exact import gaussian_delta
from accounting.mechanisms import Gaussian


def validate_target(epsilon, delta) -> tuple[float, float]:
    eps = require_number("epsilon", epsilon, low=0, low_open=True)
    dlt = require_number("delta", delta, low=0, high=1, low_open=True, high_open=True)
    return eps, dlt


def classic_gaussian_noise_multiplier(epsilon: float, delta: float) -> float:
    """The classic calibration sigma/sensitivity = sqrt(2 ln(1.25/delta)) / epsilon (Dwork and Roth,
    Thm A.1; proven only for epsilon < 1)."""
    epsilon, delta = validate_target(epsilon, delta)
    return math.sqrt(2.0 * (math.log(1.25) - math.log(delta))) / epsilon  # 1.25/delta overflows below 7e-309


def analytic_gaussian_noise_multiplier(epsilon: float, delta: float) -> float:
    """Smallest noise multiplier whose exact Gaussian profile meets (epsilon, delta) (Balle and Wang
    2018), rounded up so the returned value never falls short of the target."""
    epsilon, delta = validate_target(epsilon, delta)

    def excess(z):
        return float(gaussian_delta(1.0 / z, epsilon)) - delta

    low, high = 1e-3, 1.0
    while excess(high) > 0:
        high *= 2.0
    while excess(low) <= 0:
        low /= 2.0
    z = optimize.brentq(excess, low, high, xtol=1e-14, rtol=1e-14)
    while excess(z) > 0:  # guard the side: never return noise below the requirement
        z *= 1 + 1e-12
    return float(z)


def calibrate_gaussian(epsilon: float, delta: float, sensitivity: float = 1.0,
                       method: str = "analytic") -> Gaussian:
    """A Gaussian mechanism for (epsilon, delta) by the ``analytic`` (exact) or ``classic`` formula."""
    if method == "analytic":
        z = analytic_gaussian_noise_multiplier(epsilon, delta)
    elif method == "classic":
        z = classic_gaussian_noise_multiplier(epsilon, delta)
    else:
        raise ConfigurationError("calibration", f"unknown method {method!r}; choose analytic or classic")
    return Gaussian(z, sensitivity)


@dataclass(frozen=True)
class ClassicCheck:
    """Outcome of checking the classic calibration against the exact Gaussian profile."""

    epsilon: float
    delta: float
    noise_multiplier: float
    true_delta: float
    analytic_noise_multiplier: float

    @property
    def violated(self) -> bool:
        return self.true_delta > self.delta

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "noise_multiplier": self.noise_multiplier,
                "true_delta": self.true_delta, "analytic_noise_multiplier": self.analytic_noise_multiplier,
                "violated": self.violated}


def check_classic_calibration(epsilon: float, delta: float) -> ClassicCheck:
    """The delta the classic sigma really achieves at epsilon (exact profile) against the claimed one."""
    z = classic_gaussian_noise_multiplier(epsilon, delta)
    true_delta = float(gaussian_delta(1.0 / z, epsilon))
    return ClassicCheck(float(epsilon), float(delta), z, true_delta,
                        analytic_gaussian_noise_multiplier(epsilon, delta))


def classic_failure_threshold(delta: float, high: float = 100.0) -> float | None:
    """Smallest epsilon at which the classic calibration stops meeting delta (None if never below ``high``)."""
    def margin(eps):
        return check_classic_calibration(eps, delta).true_delta - delta

    if margin(high) <= 0:
        return None
    low = 1.0
    return float(optimize.brentq(margin, low, high, xtol=1e-6))


@dataclass(frozen=True)
class NoiseCalibration:
    """Smallest noise multiplier (to the stated tolerance, rounded up) meeting the target."""

    noise_multiplier: float
    achieved_epsilon: float
    target_epsilon: float
    delta: float
    accountant: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def calibrate_noise_multiplier(epsilon: float, delta: float, rate: float, steps: int, accountant: str = "pld",
                               relative_tolerance: float = 1e-3, progress=None,
                               **mechanism_options) -> NoiseCalibration:
    """Noise multiplier of a Poisson-subsampled Gaussian run ``steps`` times so that ``accountant``
    certifies (epsilon, delta). Conservative: the returned value is verified to meet the target.
    ``progress(evaluations, low, high)`` is called after each accountant evaluation."""
    from accounting.base import run_accountant
    from accounting.mechanisms import Composition, SubsampledGaussian
    from accounting.registry import get_accountant

    epsilon, delta = validate_target(epsilon, delta)
    require_number("steps", steps, low=1, integer=True)
    engine = get_accountant(accountant)
    SubsampledGaussian(rate, 1.0, **mechanism_options)  # validate the mechanism options up front

    calls = []

    def eps_at(z: float) -> float:
        mechanism = SubsampledGaussian(rate, z, **mechanism_options)
        result = run_accountant(engine, Composition.of(mechanism, int(steps)), delta=delta)
        if not result.ok:
            raise ConfigurationError("accountant", f"{accountant} cannot answer: {result.reason}")
        calls.append(z)
        if progress is not None:
            progress(len(calls), low, high)
        return result.epsilon

    low, high = 0.05, 1.0
    while eps_at(high) > epsilon:
        low, high = high, high * 2.0
        if high > 1e5:
            raise ConfigurationError("epsilon", f"target {epsilon} needs a noise multiplier above 1e5")
    while low > 1e-3 and eps_at(low) <= epsilon:
        low /= 2.0
    while high / low > 1.0 + relative_tolerance:  # bisection in log space; eps decreases in z
        middle = (low * high) ** 0.5
        if eps_at(middle) <= epsilon:
            high = middle
        else:
            low = middle
    return NoiseCalibration(high, eps_at(high), epsilon, delta, accountant)
