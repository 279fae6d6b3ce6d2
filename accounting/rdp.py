"""Our Renyi-DP accountant: fractional and integer orders, improved conversion, vectorised curves.

Supports Gaussian and Laplace mechanisms and the Poisson-subsampled Gaussian under add/remove and
replace-one. Every order's value is kept; an order whose value is not finite is reported in the
result details (``orders_without_value``), never dropped silently.
"""

from __future__ import annotations

import math

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
from accounting.rdp_orders import best_epsilon, curve_epsilon

CLOSED_FORM_MAX_ORDER = 2.0**20  # orders searched above the grid when the RDP is a formula


def gaussian_rdp(noise_multiplier: float, orders) -> np.ndarray:
    """RDP of the Gaussian mechanism with sensitivity 1: a / (2 z^2)."""
    return np.asarray(orders, dtype=float) / (2.0 * np.float64(noise_multiplier) ** 2)


def laplace_rdp(noise_multiplier: float, orders) -> np.ndarray:
    """RDP of the Laplace mechanism with scale b = noise_multiplier (sensitivity 1), Mironov 2017 Prop. 6."""
    a = np.asarray(orders, dtype=float)
    b = noise_multiplier
    log_terms = np.logaddexp(np.log(a / (2 * a - 1)) + (a - 1) / b, np.log((a - 1) / (2 * a - 1)) - a / b)
    return log_terms / (a - 1)


def mechanism_rdp(mechanism, orders=DEFAULT_ORDERS) -> np.ndarray:
    """Per-order RDP of one release of ``mechanism``; non-finite where the noise is too extreme for
    floating point (callers report those orders, numpy does not warn)."""
    with np.errstate(all="ignore"):
        return _mechanism_rdp(mechanism, orders)


def _mechanism_rdp(mechanism, orders) -> np.ndarray:
    if isinstance(mechanism, Laplace):
        return laplace_rdp(mechanism.noise_multiplier, orders)
    if is_unsampled(mechanism):  # a Gaussian whose means are mean_shift noise scales apart
        return gaussian_rdp(1.0 / mean_shift(mechanism), orders)
    if mechanism.sampling is not Sampling.POISSON:
        raise Unsupported(
            "fixed-size sampling is not analysed by our RDP accountant; "
            "use dpa-rdp (dp-accounting, replace-one, Wang et al.)"
        )
    if mechanism.neighbouring is Neighbouring.REPLACE_ONE:
        return replace_one_gaussian_rdp(mechanism.rate, mechanism.noise_multiplier, orders)
    return poisson_gaussian_rdp(mechanism.rate, mechanism.noise_multiplier, orders)


def composition_rdp(composition: Composition, orders=DEFAULT_ORDERS) -> np.ndarray:
    """Total per-order RDP of an adaptive composition (RDP adds up)."""
    return sum(count * mechanism_rdp(m, orders) for m, count in composition.parts)


def epsilon_curve(mechanism, steps, delta: float, orders=DEFAULT_ORDERS) -> np.ndarray:
    """Epsilon after each of ``steps`` self-compositions of ``mechanism``, in one vectorised call;
    the order is optimised continuously for every step count (``accounting.rdp_orders``)."""
    orders = np.asarray(orders, dtype=float)
    per_step = mechanism_rdp(mechanism, orders)
    finite = np.isfinite(per_step)
    if not finite.any():  # infinite RDP at every order: no finite epsilon is certified
        return np.full(np.shape(steps), math.inf)

    def per_step_rdp(at):
        return per_step[finite] if at is orders_used else mechanism_rdp(mechanism, at)

    orders_used = orders[finite]
    eps = curve_epsilon(per_step_rdp, orders_used, steps, delta)
    return np.maximum(eps, 0.0)


def _closed_form(composition: Composition) -> bool:
    """True when every part's RDP is a formula valid at any order (no quadrature)."""
    return all(isinstance(m, Laplace) or is_unsampled(m) for m, _ in composition.parts)


class RdpAccountant:
    """Renyi accountant with the improved conversion; ``orders`` default to fractional + integer."""

    name = "rdp"

    def __init__(self, orders=DEFAULT_ORDERS, refine: bool = True):
        """``refine``: optimise the order continuously around the grid's best (else: grid orders only)."""
        self.orders = np.asarray(orders, dtype=float)
        self.refine = refine
        self.last_details: dict = {}

    def _totals(self, composition: Composition) -> tuple[np.ndarray, np.ndarray]:
        """Total RDP at the grid orders where it is finite (the others are reported in the details)."""
        totals = composition_rdp(composition, self.orders)
        finite = np.isfinite(totals)
        self.last_details = {"orders_without_value": self.orders[~finite].tolist()}
        return totals[finite], self.orders[finite]

    def epsilon(self, composition: Composition, delta: float) -> float:
        totals, orders = self._totals(composition)
        if not len(orders):  # infinite RDP at every order: the bound certifies no finite epsilon
            return math.inf
        if self.refine:
            max_order = CLOSED_FORM_MAX_ORDER if _closed_form(composition) else None
            eps, order = best_epsilon(lambda a: composition_rdp(composition, a), orders, totals, delta, max_order)
        else:
            grid = improved_conversion(totals, orders, delta)
            eps, order = float(np.min(grid)), float(orders[np.argmin(grid)])
        self.last_details["best_order"] = order
        return max(eps, 0.0)

    def delta(self, composition: Composition, epsilon: float) -> float:
        totals, orders = self._totals(composition)
        if not len(orders):
            return 1.0
        return float(np.min(improved_delta(totals, orders, epsilon)))
