"""Choosing the Renyi order: bracket the best order on a grid, then optimise it continuously.

The RDP-to-(epsilon, delta) conversion is a one-dimensional function of the order. A grid alone can be
far from its minimum: for small sampling rates the RDP of the subsampled Gaussian explodes just above
order ~ 1 + 2 z^2 log(1/q), and the optimum sits right below that cliff, between two grid orders
(q = 1.04e-4, z = 3.23: the cliff is at ~191.3, the grid's best order 128 is 55% loose). So the grid
only brackets the minimum; the order is then optimised inside the bracket with exact per-order RDP:
bounded Brent (scipy) for one epsilon, a vectorised zoom (shared evaluations) for a curve, which may
stay up to a few tenths of a percent above the single-epsilon answer.

Any order gives a valid upper bound, so the refinement can only tighten the answer; the grid value is
kept when a refinement does not improve it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import optimize

from accounting.rdp_curves import improved_conversion

INTEGER_FROM = 12.0  # curve refinement uses integer orders from here on
LATTICE = 16  # and multiples of 1/16 below (1/1024 for rows below a cliff, which share brackets)
CLIFF_LATTICE = 1024
LARGE = 1e300  # stands for a non-finite conversion inside the optimiser


def _grid_bracket(orders: np.ndarray, best: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The neighbouring grid orders around each best index (below the first order: halfway to 1)."""
    low = np.where(best > 0, orders[np.maximum(best - 1, 0)], 1.0 + 0.5 * (orders[0] - 1.0))
    high = orders[np.minimum(best + 1, len(orders) - 1)]
    return low, high


def _extend_upwards(convert: Callable[[float], float], top: float, max_order: float) -> tuple[float, float]:
    """Double the order beyond the grid's top while the conversion keeps decreasing."""
    low, value = top, convert(top)
    while 2.0 * low <= max_order:
        candidate = convert(2.0 * low)
        if candidate >= value:
            return low / 2.0, 2.0 * low
        low, value = 2.0 * low, candidate
    return low / 2.0, low


def best_epsilon(
    total_rdp: Callable[[np.ndarray], np.ndarray],
    orders: np.ndarray,
    totals: np.ndarray,
    delta: float,
    max_order: float | None = None,
) -> tuple[float, float]:
    """Smallest improved-conversion epsilon over real orders, and the order that gives it.

    ``total_rdp(orders)`` returns the composition's RDP at those orders; ``totals`` are its (finite)
    values on the grid ``orders``.
    Orders above the grid are searched only up to ``max_order`` (default: the grid's top).
    """

    def convert(order: float) -> float:
        value = float(improved_conversion(total_rdp(np.array([order]))[0], order, delta))
        return value if np.isfinite(value) else LARGE

    eps = improved_conversion(totals, orders, delta)
    best = int(np.argmin(eps))
    low, high = (x[0] for x in _grid_bracket(orders, np.array([best])))
    if best == len(orders) - 1 and max_order is not None and max_order > orders[-1]:
        low, high = _extend_upwards(convert, float(orders[-1]), max_order)
    found = optimize.minimize_scalar(
        convert, bounds=(low, high), method="bounded", options={"xatol": 1e-9 * high, "maxiter": 200}
    )
    if found.fun < eps[best]:
        return float(found.fun), float(found.x)
    return float(eps[best]), float(orders[best])


def _candidates(brackets: np.ndarray, points: int, integer_from: float, lattice: int) -> np.ndarray:
    """``points`` orders across each bracket, snapped to a lattice (multiples of 1/``lattice``; integers
    from ``integer_from``, whose RDP has an exact, cheap binomial form) so that rows share evaluations."""
    candidates = np.linspace(brackets[:, 0], brackets[:, 1], points, axis=1)
    on_lattice = np.round(candidates * lattice) / lattice
    return np.where(candidates >= integer_from, np.round(candidates), on_lattice)


def curve_epsilon(
    per_step_rdp: Callable[[np.ndarray], np.ndarray],
    orders: np.ndarray,
    steps: np.ndarray,
    delta: float,
    levels: int = 2,
    cliff_levels: int = 10,
    points: int = 5,
    cliff: float = 0.01,
) -> np.ndarray:
    """Smallest improved-conversion epsilon over real orders for each step count (self-composition).

    Each level evaluates ``points`` lattice orders in every distinct bracket (one batched RDP call)
    and narrows each row's bracket to the two sub-intervals around its best point. Every row gets
    ``levels`` levels (enough for a smooth optimum; integer orders above ``INTEGER_FROM``); a row whose
    epsilon rises by more than ``cliff`` (relative) at its next order sits below an RDP cliff and gets
    up to ``cliff_levels`` more, on fractional orders: those rows share their brackets, hence their
    evaluations.
    """
    steps = np.asarray(steps, dtype=float)
    eps = improved_conversion(steps[:, None] * per_step_rdp(orders)[None, :], orders[None, :], delta)
    eps = np.where(np.isfinite(eps), eps, np.inf)
    best = np.argmin(eps, axis=1)
    value = eps[np.arange(len(steps)), best]
    low, high = _grid_bracket(orders, best)
    active = np.arange(len(steps))
    for level in range(levels + cliff_levels):
        if not len(active):
            break
        smooth = level < levels  # afterwards only rows below a cliff: fractional orders, fine lattice
        integer_from, lattice = (INTEGER_FROM, LATTICE) if smooth else (np.inf, CLIFF_LATTICE)
        found, low_a, high_a, steep = _zoom(
            per_step_rdp, steps[active], low[active], high[active], delta, points, cliff, integer_from, lattice
        )
        value[active] = np.minimum(value[active], found)
        low[active], high[active] = low_a, high_a
        if level + 1 >= levels:
            active = active[steep & (high_a > low_a)]
    return value


def _zoom(per_step_rdp, steps, low, high, delta, points, cliff, integer_from, lattice):
    """One refinement level for the given rows: best values, new brackets, and which rows are steep."""
    brackets, row_bracket = np.unique(np.stack([low, high], axis=1), axis=0, return_inverse=True)
    candidates = _candidates(brackets, points, integer_from, lattice)
    unique, where = np.unique(candidates, return_inverse=True)
    rdp = per_step_rdp(unique)[where.reshape(-1)].reshape(candidates.shape)
    row_bracket = row_bracket.reshape(-1)
    row_orders = candidates[row_bracket]
    row_eps = improved_conversion(steps[:, None] * rdp[row_bracket], row_orders, delta)
    row_eps = np.where(np.isfinite(row_eps), row_eps, np.inf)
    rows = np.arange(len(steps))
    k = np.argmin(row_eps, axis=1)
    found, at = row_eps[rows, k], row_orders[rows, k][:, None]
    higher = row_orders > at  # snapped candidates may repeat: neighbours are the next distinct orders
    below = np.max(np.where(row_orders < at, row_orders, -np.inf), axis=1)
    above = np.min(np.where(higher, row_orders, np.inf), axis=1)
    below, above = np.where(np.isfinite(below), below, at[:, 0]), np.where(np.isfinite(above), above, at[:, 0])
    next_eps = np.min(np.where(higher, row_eps, np.inf), axis=1)
    steep = next_eps - found > cliff * found
    return found, below, above, steep
