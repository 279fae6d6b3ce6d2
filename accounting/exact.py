"""Closed-form privacy profile of Gaussian mechanisms without subsampling, and of noiseless releases.

A composition of Gaussian mechanisms with noise multipliers z_1..z_k (each run c_i times) is exactly
one Gaussian mechanism with mu = sqrt(sum_i c_i / z_i^2) (Dong, Roth, Su 2019), whose tight profile is
delta(eps) = Phi(-eps/mu + mu/2) - exp(eps) Phi(-eps/mu - mu/2) (Balle and Wang 2018). Any number of
steps is one mu, so 10^12 releases cost as much as one.

Noiseless limit: when one release's mu exceeds ``NOISELESS_MU`` its Gaussian profile is 1 at every
finite epsilon (to float precision), so the release reveals whether the participant took part. With
sampling (probability p per release: the rate, or batch / population) the canary is exposed with
probability P = 1 - prod (1 - p_i)^c_i, and the tight profile is delta(eps) = P for every eps >= 0:
epsilon is infinite for delta < P and 0 for delta >= P (both relations). Epsilon may therefore be
``math.inf``: the configuration is not private at that delta. And when the same releases without
sampling already give epsilon 0 (huge noise), so does any sampling: exact answers 0.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from accounting import peers
from accounting.base import Unsupported
from accounting.mechanisms import Composition, Laplace, Sampling

NOISELESS_MU = 1e155  # mu^2 / 2 overflows: delta(eps) = 1 for every finite eps


def _log_ndtr_diff(a, b, eps):
    """log(Phi(a) - exp(eps) Phi(b)) computed stably (a > b)."""
    la, lb = special.log_ndtr(a), special.log_ndtr(b) + eps
    return la + np.log1p(-np.exp(np.minimum(lb - la, 0.0)))


PRECISE_MU = 1e-4  # below, the float difference cancels (see ``gaussian_delta``); mpmath computes it


def gaussian_delta(mu, epsilon):
    """Tight delta(eps) of the mu-GDP Gaussian mechanism (mu = sensitivity / noise std); vectorised.

    For tiny mu (huge noise) the two terms agree to about -log10(mu) digits at eps = 0 and twice that in
    the tail, so the float formula cancels to nothing (mu = 2.8e-16: delta(1e-15) came out 0 instead of
    1.1e-20, and the exact accountant said epsilon 0 at delta 1e-300). Those entries are computed with
    mpmath at enough digits."""
    mu = np.asarray(mu, dtype=float)
    eps = np.asarray(epsilon, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        value = np.exp(_log_ndtr_diff(-eps / mu + mu / 2, -eps / mu - mu / 2, eps))
    value = np.clip(np.nan_to_num(value, nan=0.0), 0.0, 1.0)
    tiny = (mu > 0) & (mu < PRECISE_MU) & np.isfinite(eps)
    if np.any(tiny):
        shape = np.broadcast_shapes(value.shape, mu.shape, eps.shape)
        value, mu_b, eps_b, tiny = (np.broadcast_to(x, shape).ravel() for x in (value, mu, eps, tiny))
        value = value.copy()
        for i in np.flatnonzero(tiny):
            value[i] = _precise_delta(float(mu_b[i]), float(eps_b[i]))
        value = value.reshape(shape)[()]  # a 0-d result as a scalar, as the float path returns it
    return value


def _precise_delta(mu: float, epsilon: float) -> float:
    """delta(eps) of mu-GDP by mpmath, with digits for the cancellation of its two terms."""
    import mpmath

    if -epsilon / mu + mu / 2 < -40.0:  # delta <= Phi(-40) < 1e-349: below the smallest float
        return 0.0
    with mpmath.workdps(30 + 2 * math.ceil(-math.log10(mu))):
        m, e = mpmath.mpf(mu), mpmath.mpf(epsilon)
        delta = mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)
        return min(1.0, max(0.0, float(delta)))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Smallest eps >= 0 with delta(eps) <= delta for the mu-GDP mechanism; ``math.inf`` when no
    finite eps meets delta (mu infinite, or beyond ``NOISELESS_MU``)."""
    if mu >= NOISELESS_MU:
        return math.inf
    if gaussian_delta(mu, 0.0) <= delta:
        return 0.0
    # delta(mu^2/2 + k mu) <= Phi(-k): start the bracket there and widen if needed.
    high = mu * mu / 2.0 + mu * (max(-special.ndtri(delta), 0.0) + 1.0) + 1.0
    while gaussian_delta(mu, high) > delta:
        high *= 2.0
        if not math.isfinite(high):
            return math.inf
    from scipy import optimize  # here, not at the top: every process importing accounting would pay for it

    # relative tolerance only: tiny noise gives tiny epsilons (an absolute 1e-12 left 1e-14 unresolved)
    eps = float(optimize.brentq(lambda e: float(gaussian_delta(mu, e)) - delta, 0.0, high, xtol=1e-300, rtol=1e-12,
                                maxiter=1000))
    while gaussian_delta(mu, eps) > delta:  # the side that meets delta: an upper bound, never below it
        eps = eps * (1 + 1e-12) + 1e-300
    return eps


def _exposure(mechanism) -> float:
    """Probability that one release includes a given participant."""
    if peers.is_unsampled(mechanism):
        return 1.0
    if mechanism.sampling is Sampling.POISSON:
        return float(mechanism.rate)
    return mechanism.batch_size / mechanism.population


def noiseless_exposure(composition: Composition) -> float | None:
    """Probability P that some noiseless release exposes the participant, or None if no part is
    noiseless. Unsupported when noiseless subsampled parts mix with noisy ones."""
    noiseless = [
        (m, c) for m, c in composition.parts if not isinstance(m, Laplace) and peers.mean_shift(m) >= NOISELESS_MU
    ]
    if not noiseless:
        return None
    if any(peers.is_unsampled(m) for m, _ in noiseless):
        return 1.0
    if len(noiseless) < len(composition.parts):
        raise Unsupported("closed form for noiseless subsampled releases only when every release is noiseless")
    log_hidden = sum(c * math.log1p(-_exposure(m)) for m, c in noiseless)
    return -math.expm1(log_hidden)


def composition_mu(composition: Composition) -> float:
    """The GDP parameter mu of a composition of un-subsampled Gaussians; Unsupported otherwise."""
    total = 0.0
    for mechanism, count in composition.parts:
        if isinstance(mechanism, Laplace) or not peers.is_unsampled(mechanism):
            raise Unsupported("closed form only for Gaussian mechanisms without subsampling (or noiseless releases)")
        total += count * min(peers.mean_shift(mechanism), NOISELESS_MU) ** 2
    return math.sqrt(total)


def unsampled_mu(composition: Composition) -> float:
    """mu of the same releases without sampling: a composition that dominates ``composition``."""
    total = 0.0
    for mechanism, count in composition.parts:
        if isinstance(mechanism, Laplace):
            raise Unsupported("closed form only for Gaussian mechanisms")
        total += count * min(peers.mean_shift(mechanism), NOISELESS_MU) ** 2
    return math.sqrt(total)


class ExactGaussianAccountant:
    """Tight closed-form accountant for compositions of Gaussian mechanisms (no subsampling), and
    for noiseless releases with or without sampling."""

    name = "exact"

    def epsilon(self, composition: Composition, delta: float) -> float:
        exposed = noiseless_exposure(composition)
        if exposed is not None:
            return math.inf if delta < exposed else 0.0
        if gaussian_epsilon(unsampled_mu(composition), delta) == 0.0:
            return 0.0  # even without sampling's help the noise hides everybody at this delta
        return gaussian_epsilon(composition_mu(composition), delta)

    def delta(self, composition: Composition, epsilon: float) -> float:
        exposed = noiseless_exposure(composition)
        if exposed is not None:
            return exposed
        return float(gaussian_delta(composition_mu(composition), epsilon))
