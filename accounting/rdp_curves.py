"""Renyi-DP curves of the Poisson-subsampled Gaussian mechanism, vectorised over orders.

All functions work in units of the clip norm: one participant moves the (unit-weight) sum by at most 1
under add/remove; the noise standard deviation is ``sigma`` (the noise multiplier).

- Add/remove (Mironov, Talwar, Zhang 2019): RDP(a) = log(A_a)/(a-1) with
  A_a = E_{x ~ N(0, sigma^2)}[((1-q) + q exp((2x-1)/(2 sigma^2)))^a]; for integer a this is the
  binomial sum below (exact); for fractional a we integrate numerically on a fine grid in log space.
- Replace-one: the pair (1-q)N(0,s^2) + qN(+1,s^2) against (1-q)N(0,s^2) + qN(-1,s^2) (the two
  records pointing in opposite directions, each of norm 1), integrated numerically.
"""

from __future__ import annotations

import numpy as np
from scipy import special

# Orders searched by default: fine fractional orders near 1 (where small-delta optima fall for heavy
# subsampling), then integers; no order is ever dropped without being reported.
DEFAULT_ORDERS = np.unique(np.concatenate([
    1.0 + np.geomspace(0.01, 1.0, 40),           # 1.01 .. 2.0
    np.linspace(2.0, 12.0, 101),                  # step 0.1
    np.arange(13.0, 65.0), np.array([80.0, 96.0, 128.0, 192.0, 256.0, 512.0, 1024.0]),
]))
MOMENTS_ORDERS = np.arange(2.0, 257.0)


def _log_a_integer(q: float, sigma: float, orders: np.ndarray) -> np.ndarray:
    """log A_a for integer orders by the binomial expansion (exact up to floating point)."""
    orders = orders.astype(int)
    amax = int(orders.max())
    k = np.arange(amax + 1)
    out = np.empty(len(orders))
    log_q = np.log(q)
    log_1mq = np.log1p(-q) if q < 1 else -np.inf
    for i, a in enumerate(orders):
        kk = k[: a + 1]
        log_binom = special.gammaln(a + 1) - special.gammaln(kk + 1) - special.gammaln(a - kk + 1)
        with np.errstate(invalid="ignore"):
            terms = log_binom + kk * log_q + (a - kk) * log_1mq + (kk * kk - kk) / (2 * sigma**2)
        if q == 1:
            terms = np.where(kk == a, log_binom + (kk * kk - kk) / (2 * sigma**2), -np.inf)
        out[i] = special.logsumexp(terms)
    return out


def _integration_grid(sigma: float, orders: np.ndarray, points: int):
    """A grid (per order) covering the mass of the integrands below; shape (orders, points)."""
    low = -1.0 - 14.0 * sigma
    high = 1.0 + 14.0 * sigma + np.maximum(orders - 1.0, 0.0) * 1.0  # the tilted peak sits near a-1/2
    t = np.linspace(0.0, 1.0, points)
    return low + (high - low)[:, None] * t[None, :]


def _trapezoid_log(log_values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """log of the trapezoid integral of exp(log_values) along the last axis."""
    dx = grid[:, 1] - grid[:, 0]
    weights = np.full(grid.shape[1], 1.0)
    weights[[0, -1]] = 0.5
    return special.logsumexp(log_values + np.log(weights), axis=-1) + np.log(dx)


def _log_normal_pdf(x, mean, sigma):
    return -0.5 * ((x - mean) / sigma) ** 2 - np.log(sigma * np.sqrt(2 * np.pi))


def _log_mixture(x, q, mean, sigma):
    base = _log_normal_pdf(x, 0.0, sigma)
    if q == 1:
        return _log_normal_pdf(x, mean, sigma)
    return np.logaddexp(np.log1p(-q) + base, np.log(q) + _log_normal_pdf(x, mean, sigma))


def _log_a_numeric(q: float, sigma: float, orders: np.ndarray, points: int = 6001) -> np.ndarray:
    """log A_a for any real order a > 1 by trapezoidal integration in log space."""
    x = _integration_grid(sigma, orders, points)
    log_ratio = _log_mixture(x, q, 1.0, sigma) - _log_normal_pdf(x, 0.0, sigma)
    integrand = _log_normal_pdf(x, 0.0, sigma) + orders[:, None] * log_ratio
    return _trapezoid_log(integrand, x)


def poisson_gaussian_rdp(q: float, sigma: float, orders=DEFAULT_ORDERS) -> np.ndarray:
    """RDP of one Poisson-subsampled Gaussian release under add/remove, per order (> 1)."""
    orders = np.asarray(orders, dtype=float)
    log_a = np.empty(len(orders))
    is_int = orders == np.round(orders)
    if is_int.any():
        log_a[is_int] = _log_a_integer(q, sigma, orders[is_int])
    if (~is_int).any():
        log_a[~is_int] = _log_a_numeric(q, sigma, orders[~is_int])
    return np.maximum(log_a, 0.0) / (orders - 1.0)


def replace_one_gaussian_rdp(q: float, sigma: float, orders=DEFAULT_ORDERS, points: int = 8001) -> np.ndarray:
    """RDP of one Poisson-subsampled Gaussian release under replace-one (antipodal records), per order."""
    orders = np.asarray(orders, dtype=float)
    low = -1.0 - 14.0 * sigma
    high = 1.0 + 14.0 * sigma + 2.0 * np.maximum(orders - 1.0, 0.0)
    x = low + (high - low)[:, None] * np.linspace(0.0, 1.0, points)[None, :]
    log_p = _log_mixture(x, q, 1.0, sigma)
    log_q = _log_mixture(x, q, -1.0, sigma)
    integrand = orders[:, None] * log_p + (1.0 - orders[:, None]) * log_q
    return np.maximum(_trapezoid_log(integrand, x), 0.0) / (orders - 1.0)


def classic_conversion(rdp_total: np.ndarray, orders: np.ndarray, delta: float) -> np.ndarray:
    """(eps, delta) from RDP by eps = RDP(a) + log(1/delta)/(a-1) (Mironov 2017), per order."""
    return rdp_total + np.log(1.0 / delta) / (orders - 1.0)


def improved_conversion(rdp_total: np.ndarray, orders: np.ndarray, delta: float) -> np.ndarray:
    """(eps, delta) from RDP by Canonne, Kamath, Steinke 2020 / Asoodeh et al.:
    eps = RDP(a) + log((a-1)/a) - (log(delta) + log(a))/(a-1), per order."""
    return rdp_total + np.log1p(-1.0 / orders) - (np.log(delta) + np.log(orders)) / (orders - 1.0)


def improved_delta(rdp_total: np.ndarray, orders: np.ndarray, epsilon: float) -> np.ndarray:
    """delta for a given epsilon, inverting the improved conversion per order."""
    log_delta = (orders - 1.0) * (rdp_total - epsilon + np.log1p(-1.0 / orders)) - np.log(orders)
    return np.exp(np.minimum(log_delta, 0.0))


def classic_delta(rdp_total: np.ndarray, orders: np.ndarray, epsilon: float) -> np.ndarray:
    return np.exp(np.minimum((orders - 1.0) * (rdp_total - epsilon), 0.0))
