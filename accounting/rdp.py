"""Our Renyi-DP accountant: fractional and integer orders, improved conversion, vectorised curves.

Supports Gaussian and Laplace mechanisms and the Poisson-subsampled Gaussian under add/remove and
replace-one. Every order's value is kept; an order whose value is not finite is reported in the
result details (``orders_without_value``), never dropped silently.
"""

from __future__ import annotations

import numpy as np

from accounting.base import Unsupported
from accounting.mechanisms import Composition, Laplace, Neighbouring, Sampling
from accounting.peers import is_unsampled, mean_shift
from accounting.rdp_curves import (
    DEFAULT_ORDERS,
    improved_conversion,
    improved_delta,
    poisson_gaussian_rdp,
    replace_one_gaussian_rdp,
)


def gaussian_rdp(noise_multiplier: float, orders) -> np.ndarray:
    """RDP of the Gaussian mechanism with sensitivity 1: a / (2 z^2)."""
    return np.asarray(orders, dtype=float) / (2.0 * noise_multiplier**2)


def laplace_rdp(noise_multiplier: float, orders) -> np.ndarray:
    """RDP of the Laplace mechanism with scale b = noise_multiplier (sensitivity 1), Mironov 2017 Prop. 6."""
    a = np.asarray(orders, dtype=float)
    b = noise_multiplier
    log_terms = np.logaddexp(np.log(a / (2 * a - 1)) + (a - 1) / b, np.log((a - 1) / (2 * a - 1)) - a / b)
    return log_terms / (a - 1)


def mechanism_rdp(mechanism, orders=DEFAULT_ORDERS) -> np.ndarray:
    """Per-order RDP of one release of ``mechanism``."""
    if isinstance(mechanism, Laplace):
        return laplace_rdp(mechanism.noise_multiplier, orders)
    if is_unsampled(mechanism):  # a Gaussian whose means are mean_shift noise scales apart
        return gaussian_rdp(1.0 / mean_shift(mechanism), orders)
    if mechanism.sampling is not Sampling.POISSON:
        raise Unsupported("fixed-size sampling is not analysed by our RDP accountant; "
                          "use dpa-rdp (dp-accounting, replace-one, Wang et al.)")
    if mechanism.neighbouring is Neighbouring.REPLACE_ONE:
        return replace_one_gaussian_rdp(mechanism.rate, mechanism.noise_multiplier, orders)
    return poisson_gaussian_rdp(mechanism.rate, mechanism.noise_multiplier, orders)


def composition_rdp(composition: Composition, orders=DEFAULT_ORDERS) -> np.ndarray:
    """Total per-order RDP of an adaptive composition (RDP adds up)."""
    return sum(count * mechanism_rdp(m, orders) for m, count in composition.parts)


def epsilon_curve(mechanism, steps, delta: float, orders=DEFAULT_ORDERS) -> np.ndarray:
    """Epsilon after each of ``steps`` self-compositions of ``mechanism``, in one vectorised call."""
    per_step = mechanism_rdp(mechanism, orders)
    steps = np.asarray(steps, dtype=float)
    totals = steps[:, None] * per_step[None, :]
    eps = improved_conversion(totals, np.asarray(orders, dtype=float)[None, :], delta)
    return np.maximum(np.nanmin(eps, axis=1), 0.0)


class RdpAccountant:
    """Renyi accountant with the improved conversion; ``orders`` default to fractional + integer."""

    name = "rdp"

    def __init__(self, orders=DEFAULT_ORDERS):
        self.orders = np.asarray(orders, dtype=float)
        self.last_details: dict = {}

    def _totals(self, composition: Composition) -> tuple[np.ndarray, np.ndarray]:
        totals = composition_rdp(composition, self.orders)
        finite = np.isfinite(totals)
        self.last_details = {"orders_without_value": self.orders[~finite].tolist()}
        if not finite.any():
            raise FloatingPointError("no order gave a finite RDP value")
        return totals[finite], self.orders[finite]

    def epsilon(self, composition: Composition, delta: float) -> float:
        totals, orders = self._totals(composition)
        eps = improved_conversion(totals, orders, delta)
        best = int(np.argmin(eps))
        self.last_details["best_order"] = float(orders[best])
        return max(float(eps[best]), 0.0)

    def delta(self, composition: Composition, epsilon: float) -> float:
        totals, orders = self._totals(composition)
        return float(np.min(improved_delta(totals, orders, epsilon)))
