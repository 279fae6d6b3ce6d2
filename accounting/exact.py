"""Closed-form privacy profile of Gaussian mechanisms without subsampling.

A composition of Gaussian mechanisms with noise multipliers z_1..z_k (each run c_i times) is exactly
one Gaussian mechanism with mu = sqrt(sum_i c_i / z_i^2) (Dong, Roth, Su 2019), whose tight profile is
delta(eps) = Phi(-eps/mu + mu/2) - exp(eps) Phi(-eps/mu - mu/2) (Balle and Wang 2018).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from accounting import peers
from accounting.base import Unsupported
from accounting.mechanisms import Composition, Laplace


def _log_ndtr_diff(a, b, eps):
    """log(Phi(a) - exp(eps) Phi(b)) computed stably (a > b)."""
    la, lb = special.log_ndtr(a), special.log_ndtr(b) + eps
    return la + np.log1p(-np.exp(np.minimum(lb - la, 0.0)))


def gaussian_delta(mu, epsilon):
    """Tight delta(eps) of the mu-GDP Gaussian mechanism (mu = sensitivity / noise std); vectorised."""
    mu = np.asarray(mu, dtype=float)
    eps = np.asarray(epsilon, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.exp(_log_ndtr_diff(-eps / mu + mu / 2, -eps / mu - mu / 2, eps))
    return np.clip(np.nan_to_num(value, nan=0.0), 0.0, 1.0)


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Smallest eps >= 0 with delta(eps) <= delta for the mu-GDP mechanism."""
    if gaussian_delta(mu, 0.0) <= delta:
        return 0.0
    high = 1.0
    while gaussian_delta(mu, high) > delta:
        high *= 2.0
        if high > 1e6:
            raise FloatingPointError("epsilon exceeds 1e6")
    return float(optimize.brentq(lambda e: float(gaussian_delta(mu, e)) - delta, 0.0, high, xtol=1e-12,
                                 rtol=1e-12))


def composition_mu(composition: Composition) -> float:
    """The GDP parameter mu of a composition of un-subsampled Gaussians; Unsupported otherwise."""
    total = 0.0
    for mechanism, count in composition.parts:
        if isinstance(mechanism, Laplace) or not peers.is_unsampled(mechanism):
            raise Unsupported("closed form only for Gaussian mechanisms without subsampling")
        total += count * peers.mean_shift(mechanism) ** 2
    return math.sqrt(total)


class ExactGaussianAccountant:
    """Tight closed-form accountant for compositions of Gaussian mechanisms (no subsampling)."""

    name = "exact"

    def epsilon(self, composition: Composition, delta: float) -> float:
        return gaussian_epsilon(composition_mu(composition), delta)

    def delta(self, composition: Composition, epsilon: float) -> float:
        return float(gaussian_delta(composition_mu(composition), epsilon))
