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

# Orders that bracket the best order (``accounting.rdp_orders`` then optimises it continuously):
# fractional orders near 1 (where optima fall for large epsilons), then integers; no order is ever
# dropped without being reported.
DEFAULT_ORDERS = np.unique(
    np.concatenate(
        [
            1.0 + np.geomspace(0.01, 1.0, 20),  # 1.01 .. 2.0
            np.linspace(2.0, 12.0, 41),  # step 0.25
            np.arange(13.0, 65.0),
            np.array([80.0, 96.0, 128.0, 192.0, 256.0, 512.0, 1024.0]),
        ]
    )
)
MOMENTS_ORDERS = np.arange(2.0, 257.0)
CHUNK = 32  # orders integrated together


def _log_a_integer(q: float, sigma: float, orders: np.ndarray) -> np.ndarray:
    """log A_a for integer orders by the binomial expansion (exact up to floating point).

    All orders at once on a ragged layout: order a contributes its a + 1 terms k = 0..a.
    """
    a_values = orders.astype(int)
    lengths = a_values + 1
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    a = np.repeat(a_values, lengths)
    k = np.arange(lengths.sum()) - np.repeat(starts, lengths)
    log_factorial = special.gammaln(np.arange(int(a_values.max()) + 1) + 1.0)
    quadratic = (k * k - k) / (2 * np.float64(sigma) ** 2)
    if q == 1:
        terms = np.where(k == a, quadratic, -np.inf)
    else:
        log_binom = log_factorial[a] - log_factorial[k] - log_factorial[a - k]
        terms = log_binom + k * np.log(q) + (a - k) * np.log1p(-q) + quadratic
    peak = np.maximum.reduceat(terms, starts)
    return np.log(np.add.reduceat(np.exp(terms - np.repeat(peak, lengths)), starts)) + peak


def _common_grid(sigma: float, low: float, high: float) -> tuple[np.ndarray, float]:
    """A uniform grid resolving Gaussians of width ``sigma`` on [low, high], and its spacing."""
    with np.errstate(over="ignore"):  # a subnormal sigma: sigma / 12 is 0 (ZeroDivisionError), this is inf
        points = int(np.clip(np.ceil(np.float64(high - low) * 12.0 / np.float64(sigma)), 600, 40000))
    grid = np.linspace(low, high, points)
    return grid, grid[1] - grid[0]


def _log_trapezoid(log_values: np.ndarray, dx: float) -> np.ndarray:
    """log of the trapezoid integral of exp(log_values) along the last axis (uniform spacing)."""
    peak = np.max(log_values, axis=-1, keepdims=True)
    scaled = np.exp(log_values - peak)
    total = scaled.sum(axis=-1) - 0.5 * (scaled[..., 0] + scaled[..., -1])
    return np.log(total) + peak[..., 0] + np.log(dx)


def _log_normal_pdf(x, mean, sigma):
    return -0.5 * ((x - mean) / sigma) ** 2 - np.log(sigma * np.sqrt(2 * np.pi))


def _log_mixture(x, q, mean, sigma):
    if q == 1:
        return _log_normal_pdf(x, mean, sigma)
    return np.logaddexp(np.log1p(-q) + _log_normal_pdf(x, 0.0, sigma), np.log(q) + _log_normal_pdf(x, mean, sigma))


def _log_a_numeric(q: float, sigma: float, orders: np.ndarray) -> np.ndarray:
    """log A_a for real orders a > 1 by trapezoidal integration in log space.

    The log-likelihood ratio L(x) does not depend on the order, so one grid (covering the largest
    order's tilted peak near x = a) serves all orders: integrand_a(x) = log N(x; 0, s) + a L(x).
    """
    x, dx = _common_grid(sigma, -1.0 - 14.0 * sigma, float(orders.max()) + 1.0 + 14.0 * sigma)
    base = _log_normal_pdf(x, 0.0, sigma)
    log_ratio = _log_mixture(x, q, 1.0, sigma) - base
    out = np.empty(len(orders))
    for start in range(0, len(orders), CHUNK):  # blocks that stay in cache
        block = orders[start : start + CHUNK, None]
        out[start : start + CHUNK] = _log_trapezoid(base[None, :] + block * log_ratio[None, :], dx)
    return out


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


def replace_one_gaussian_rdp(q: float, sigma: float, orders=DEFAULT_ORDERS) -> np.ndarray:
    """RDP of one Poisson-subsampled Gaussian release under replace-one (antipodal records), per order.

    D_a(P || Q) with P, Q the mixtures towards +1 and -1; by symmetry the other direction is equal.
    The integrand a log P + (1-a) log Q peaks near x = 2a - 1, so large orders need a wide grid;
    orders are integrated in groups of similar size to keep the grid short.
    """
    orders = np.asarray(orders, dtype=float)
    out = np.empty(len(orders))
    for group in np.array_split(np.argsort(orders), max(1, len(orders) // 16)):
        x, dx = _common_grid(sigma, -1.0 - 14.0 * sigma, 2.0 * float(orders[group].max()) + 14.0 * sigma)
        log_p, log_q = _log_mixture(x, q, 1.0, sigma), _log_mixture(x, q, -1.0, sigma)
        a = orders[group][:, None]
        out[group] = _log_trapezoid(log_q[None, :] + a * (log_p - log_q)[None, :], dx)
    return np.maximum(out, 0.0) / (orders - 1.0)


def classic_conversion(rdp_total: np.ndarray, orders: np.ndarray, delta: float) -> np.ndarray:
    """(eps, delta) from RDP by eps = RDP(a) + log(1/delta)/(a-1) (Mironov 2017), per order. The log is
    taken as -log(delta): 1/delta overflows to inf for a subnormal delta (below about 5.6e-309)."""
    return rdp_total - np.log(delta) / (orders - 1.0)


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
