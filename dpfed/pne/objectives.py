"""Synthetic objectives for X-armed bandits, their heterogeneous local versions, and bounded noise.

Every global objective maps points of shape (n, d) to rewards in [0, 1] and knows its true maximum
``f_star`` (regret is always measured against it, on the global objective):

* ``garland``: ``x (1 - x) (4 - sqrt|sin 60x|)`` on [0, 1]. Its supremum is the cusp at x* = pi/6,
  f* = 4 (pi/6)(1 - pi/6) ~= 0.99777 (not 1, as PyXAB assumes; a grid search under-reports it because
  of the square-root cusp).
* ``doublesine``: PyXAB's DoubleSine (rho1 = 0.3, rho2 = 0.8), values in [-1, 0] with maximum 0 at 0.5,
  shifted by +1 so rewards lie in [0, 1]; regret is unchanged by the shift.
* ``himmelblau``: ``1 - h(x, y) / 890`` on [-5, 5]^2, where h is Himmelblau's function (minimum 0 at
  four points, maximum 890 at (5, 5) on this box), so rewards lie in [0, 1] and f* = 1.

``LocalObjectives`` gives client m the local objective ``f_m = f + p_m - mean_j p_j`` for random
perturbations ``p_m`` (so the clients' average is exactly the global objective): ``kind="shift"``
(constant vertical shifts, PyXAB's perturbed functions, trivial heterogeneity) or ``kind="bumps"``
(smooth x-dependent random waves, local maximisers differ).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number
from accounting.mechanisms import as_generator


@dataclass(frozen=True)
class Objective:
    """A global objective: ``values(x)`` for x of shape (n, d), its box ``domain`` (d, 2), ``f_star``
    (the supremum) and one maximiser ``x_star``."""

    name: str
    domain: np.ndarray
    function: Callable[[np.ndarray], np.ndarray]
    f_star: float
    x_star: np.ndarray

    def values(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float).reshape(-1, self.domain.shape[0])
        return self.function(x)

    def regret(self, x) -> np.ndarray:
        """Instantaneous regret ``f* - f(x)`` of each point."""
        return self.f_star - self.values(x)


def _garland(x: np.ndarray) -> np.ndarray:
    x = x[:, 0]
    return x * (1.0 - x) * (4.0 - np.sqrt(np.abs(np.sin(60.0 * x))))


def _doublesine(x: np.ndarray) -> np.ndarray:
    u = 2.0 * np.abs(x[:, 0] - 0.5)
    ep1, ep2 = -math.log2(0.3), -math.log2(0.8)
    safe = np.where(u > 0, u, 1.0)
    wave = (np.sin(2.0 * np.pi * np.log2(safe) / 2.0) + 1.0) / 2.0
    value = wave * (safe**ep2 - safe**ep1) - safe**ep2
    return np.where(u > 0, value, 0.0) + 1.0


HIMMELBLAU_MAX = 890.0  # h(5, 5) = (25 + 5 - 11)^2 + (5 + 25 - 7)^2 = 361 + 529


def _himmelblau(x: np.ndarray) -> np.ndarray:
    a, b = x[:, 0], x[:, 1]
    h = (a**2 + b - 11.0) ** 2 + (a + b**2 - 7.0) ** 2
    return 1.0 - h / HIMMELBLAU_MAX


OBJECTIVES = {
    "garland": lambda: Objective(
        "garland", np.array([[0.0, 1.0]]), _garland, 4.0 * (math.pi / 6) * (1.0 - math.pi / 6), np.array([math.pi / 6])
    ),
    "doublesine": lambda: Objective("doublesine", np.array([[0.0, 1.0]]), _doublesine, 1.0, np.array([0.5])),
    "himmelblau": lambda: Objective(
        "himmelblau", np.array([[-5.0, 5.0], [-5.0, 5.0]]), _himmelblau, 1.0, np.array([3.0, 2.0])
    ),
}


def get_objective(name: str) -> Objective:
    """The global objective called ``name`` (garland, doublesine, himmelblau)."""
    key = str(name).lower()
    if key not in OBJECTIVES:
        raise ConfigurationError("objective", f"unknown objective {name!r}; choose one of {', '.join(OBJECTIVES)}")
    return OBJECTIVES[key]()


def checked_local_settings(num_clients, heterogeneity, kind: str) -> tuple[int, float]:
    """(M, heterogeneity) of local objectives, validated (M >= 1, heterogeneity >= 0, a known kind)."""
    m = int(require_number("clients", num_clients, low=1, integer=True))
    heterogeneity = require_number("heterogeneity", heterogeneity, low=0)
    if kind not in ("bumps", "shift", "none"):
        raise ConfigurationError("heterogeneity_kind", f"unknown kind {kind!r}; choose bumps, shift or none")
    return m, heterogeneity


def wave_bumps(heterogeneity: float, weight, cycles, dirs, offset, unit) -> np.ndarray:
    """Un-centred bumps ``heterogeneity * sum_w weight * sin(cycles <dir, unit> + offset)``, (M, n) for ``unit``
    (n, d) in [0, 1]^d: one run's perturbations before centring (``LocalObjectives`` and its batch)."""
    angle = cycles * np.einsum("mwd,nd->mwn", dirs, unit)
    return heterogeneity * np.einsum("mw,mwn->mn", weight, np.sin(angle + offset))


class LocalObjectives:
    """Heterogeneous local objectives of ``num_clients`` clients whose average is the global one.

    Parameters
    ----------
    objective : the global objective.
    num_clients : M >= 1.
    heterogeneity : size of the perturbations (std of the shifts, or amplitude of the waves).
    kind : ``"bumps"`` (x-dependent), ``"shift"`` (constant per client) or ``"none"``.
    rng : seed or Generator drawing the perturbations (once, at construction).
    """

    def __init__(
        self,
        objective: Objective,
        num_clients: int,
        heterogeneity: float = 0.1,
        kind: str = "bumps",
        rng=None,
        waves: int = 3,
    ):
        self.objective = objective
        self.num_clients, self.heterogeneity = checked_local_settings(num_clients, heterogeneity, kind)
        self.kind = kind
        gen = as_generator(rng)
        d = objective.domain.shape[0]
        m = self.num_clients
        self._shift = gen.standard_normal(m) * self.heterogeneity
        # waves: frequencies (cycles over the domain), directions, phases, weights
        self._freq = gen.uniform(1.0, 4.0, size=(m, waves))
        self._dirs = gen.standard_normal((m, waves, d))
        self._dirs /= np.sqrt(np.add.reduce(self._dirs * self._dirs, axis=-1, keepdims=True))  # np.linalg.norm's sum
        self._phase = gen.uniform(0.0, 2.0 * np.pi, size=(m, waves))
        self._weight = gen.standard_normal((m, waves)) / math.sqrt(waves)
        # the loop-invariant factors of ``perturbations``, evaluated as its expression groups them
        self._cycles = 2.0 * np.pi * self._freq[:, :, None]
        self._offset = self._phase[:, :, None]
        lo, hi = objective.domain[:, 0], objective.domain[:, 1]
        self._lo, self._span = lo, hi - lo

    def perturbations(self, x) -> np.ndarray:
        """Centred perturbations ``p_m(x) - mean_j p_j(x)``, shape (M, n)."""
        x = np.asarray(x, dtype=float).reshape(-1, self._lo.shape[0])
        m, n = self.num_clients, x.shape[0]
        if self.kind == "none" or m == 1 or self.heterogeneity == 0:
            return np.zeros((m, n))
        if self.kind == "shift":
            raw = np.broadcast_to(self._shift[:, None], (m, n))
        else:
            unit = (x - self._lo) / self._span
            raw = wave_bumps(self.heterogeneity, self._weight, self._cycles, self._dirs, self._offset, unit)
        return self.centred(raw)

    @staticmethod
    def centred(raw: np.ndarray) -> np.ndarray:
        """``raw`` (M, n) minus its clients' mean (ndarray.mean's sum and division, without its overhead)."""
        return raw - np.add.reduce(raw, axis=0, keepdims=True) / raw.shape[0]

    def values(self, x) -> np.ndarray:
        """Local objective values of every client at every point, shape (M, n)."""
        return self.objective.values(x)[None, :] + self.perturbations(x)


@dataclass(frozen=True)
class ObservationNoise:
    """Bounded zero-mean observation noise: ``uniform`` on [-width/2, width/2], or ``none``."""

    kind: str = "uniform"
    width: float = 0.2

    def __post_init__(self):
        if self.kind not in ("uniform", "none"):
            raise ConfigurationError("noise", f"unknown noise {self.kind!r}; choose uniform or none")
        require_number("noise_width", self.width, low=0)

    def sample(self, rng, shape) -> np.ndarray:
        if self.kind == "none" or self.width == 0:
            return np.zeros(shape)
        return as_generator(rng).uniform(-self.width / 2.0, self.width / 2.0, size=shape)
