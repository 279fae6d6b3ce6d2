"""Noise calibration for a target (epsilon, delta), conservative on the stated side, and checks of
calibration formulas against the exact privacy profile."""

from __future__ import annotations

import math
from dataclasses import dataclass

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
    from scipy import optimize  # here, not at the top: every process importing accounting would pay for it

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
    from scipy import optimize

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
                               relative_tolerance: float = 1e-3, progress=None, announce=None,
                               **mechanism_options) -> NoiseCalibration:
    """Noise multiplier of a Poisson-subsampled Gaussian run ``steps`` times so that ``accountant``
    certifies (epsilon, delta): a value that meets the target, at most ``relative_tolerance`` above one
    that misses it. Conservative: every answer was evaluated by ``accountant`` itself.
    ``progress(evaluations, low, high)`` is called after each accountant evaluation; an evaluation
    predicted to take long (``accounting.cost``) is announced on ``announce`` (default stderr) before it
    starts and every 10 s while it runs, as ``account_all`` does.

    The search starts from the RDP calibration (milliseconds; RDP is looser than a tight accountant, so
    its noise is an upper estimate), brackets the answer with growing steps, then narrows the bracket by
    Brent's method on log z and closes it with two evaluations straddling the estimate (about 6 tight
    evaluations instead of 15 for plain bisection from a fixed bracket; ``benchmarks/calibrate_speed.py``).
    """
    from accounting.base import run_accountant
    from accounting.cost import BUDGET_SECONDS, announce_if_slow, estimate_seconds, stderr_progress
    from accounting.mechanisms import Composition, SubsampledGaussian
    from accounting.registry import get_accountant

    say = announce or stderr_progress

    epsilon, delta = validate_target(epsilon, delta)
    require_number("steps", steps, low=1, integer=True)
    engine = get_accountant(accountant)
    SubsampledGaussian(rate, 1.0, **mechanism_options)  # validate the mechanism options up front
    search = _NoiseSearch(epsilon, progress)

    def eps_at(z: float) -> float:
        composition = Composition.of(SubsampledGaussian(rate, z, **mechanism_options), int(steps))
        seconds, what = estimate_seconds(engine.name, composition)
        if seconds > BUDGET_SECONDS:
            say(f"{engine.name}: about {seconds:.0f} s for one evaluation at z = {z:.4g} ({what})")
        with announce_if_slow(engine.name, what, say):
            result = run_accountant(engine, composition, delta=delta)
        if not result.ok:
            raise ConfigurationError("accountant", f"{accountant} cannot answer: {result.reason}")
        return result.epsilon

    search.evaluate = eps_at
    options = mechanism_options
    guess = 1.0 if engine.name == "rdp" else _rdp_guess(epsilon, delta, rate, steps, relative_tolerance, options)
    low, high = search.bracket(guess)
    high = search.narrow(low, high, relative_tolerance)
    return NoiseCalibration(high, search.values[high], epsilon, delta, accountant)


def _rdp_guess(epsilon, delta, rate, steps, relative_tolerance, mechanism_options) -> float:
    """The RDP calibration as a starting point (1.0 where RDP cannot answer)."""
    try:
        return calibrate_noise_multiplier(epsilon, delta, rate, steps, "rdp", relative_tolerance,
                                          **mechanism_options).noise_multiplier
    except ConfigurationError:
        return 1.0


class _NoiseSearch:
    """The noise search's state: every (z, epsilon) evaluated, the bracket they imply, progress reports.
    epsilon is assumed to decrease in z; ``low`` is the largest z known to miss the target, ``high`` the
    smallest known to meet it."""

    FLOOR, CEILING = 1e-3, 1e5  # below FLOOR the answer is FLOOR's bracket; above CEILING it is refused

    def __init__(self, target: float, progress):
        self.target, self.progress, self.values, self.evaluate = target, progress, {}, None
        self.low, self.high = 0.0, math.inf

    def meets(self, z: float) -> bool:
        if z not in self.values:
            self.values[z] = eps = self.evaluate(z)
            if eps <= self.target:
                self.high = min(self.high, z)
            else:
                self.low = max(self.low, z)
            if self.progress is not None:
                self.progress(len(self.values), self.low, self.high)
        return self.values[z] <= self.target

    def bracket(self, guess: float) -> tuple[float, float]:
        """(low, high) with low missing (or at the floor) and high meeting, found from ``guess`` by steps
        that square each time (factors 1.05, 1.1, 1.2, 1.5, 2.2, ...)."""
        step, z = 1.05, guess
        if self.meets(z):
            while z > self.FLOOR and self.meets(max(z / step, self.FLOOR)):
                z, step = max(z / step, self.FLOOR), step * step
            return max(z / step, self.FLOOR) if z > self.FLOOR else z, z
        while not self.meets(z * step):
            z, step = z * step, step * step
            if z * step > self.CEILING:
                raise ConfigurationError("epsilon", f"target {self.target} needs a noise multiplier above 1e5")
        return z, z * step

    def narrow(self, low: float, high: float, tolerance: float) -> float:
        """The smallest meeting z found once high / low <= 1 + tolerance."""
        width = math.log1p(tolerance)
        if high / low > 1.0 + tolerance and self.values.get(low, math.inf) < math.inf:
            def excess(u):
                z = math.exp(u)
                self.meets(z)
                return min(self.values[z] - self.target, 1e12)  # an infinite epsilon would derail the steps

            from scipy import optimize

            root = optimize.brentq(excess, math.log(low), math.log(high), xtol=width / 4)
            for u in (root + width * 0.45, root - width * 0.45):  # straddle the estimate to close the bracket
                if self.low < math.exp(u) < self.high:
                    self.meets(math.exp(u))
        low, high = self.low or low, self.high
        while high / low > 1.0 + tolerance:  # guard: plain bisection in log space until the bracket is closed
            middle = math.sqrt(low * high)
            low, high = (low, middle) if self.meets(middle) else (middle, high)
        return high
