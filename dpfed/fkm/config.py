"""FKM configuration and the corrected constants of notes C.3.

With the loose OGD bound the seed uses, ``E[Regret_T] <= D^2/eta + eta T n^2 B^2 / delta^2 + 3 delta T G``
(n = dimension, D = diameter, G = Lipschitz constant, B = a bound on the root mean square of the fed-back
value: ``|f| <= B`` without noise). Its minimiser is ``eta* = D delta / (n B sqrt(T))`` and
``delta* = sqrt(2 n B D / (3 G)) T^(-1/4)``, giving ``2 sqrt(6) sqrt(n B D G) T^(3/4)`` (the seed's
stated ``eta`` is a typo; notes C.3). The shrunk set is ``K_delta = (1 - delta/R) K`` for the ball K of
radius R (the ball of radius R lies in K, notes C.1), so delta must be below R.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from accounting.errors import ConfigurationError, require_number
from dpfed.fkm.losses import LOSS_KINDS


def regret_bound(
    dim: int, horizon: int, diameter: float, lipschitz: float, feedback_bound: float, exploration: float, step: float
) -> float:
    """The seed's expected-regret bound ``D^2/eta + eta T n^2 B^2/delta^2 + 3 delta T G`` (notes C.3)."""
    try:
        variance = step * horizon * dim**2 * feedback_bound**2 / exploration**2
    except OverflowError:  # a feedback bound like 1e300 (dataset level at a rate of 1e-300): the bound is inf
        variance = math.inf
    return diameter**2 / step + variance + 3 * exploration * horizon * lipschitz


def corrected_parameters(
    dim: int, horizon: int, diameter: float, lipschitz: float, feedback_bound: float
) -> tuple[float, float]:
    """``(delta*, eta*)`` minimising ``regret_bound`` (notes C.3, corrected)."""
    delta = math.sqrt(2 * dim * feedback_bound * diameter / (3 * lipschitz)) * horizon**-0.25
    eta = diameter * delta / (dim * feedback_bound * math.sqrt(horizon))
    return delta, eta


@dataclass(frozen=True)
class FKMConfig:
    """One FKM problem: dimension, horizon, the ball K of ``radius``, the synthetic loss family, and
    optional overrides of the exploration radius (delta) and step size (eta)."""

    dim: int = 5
    horizon: int = 10_000
    radius: float = 1.0
    loss: str = "linear"
    lipschitz: float = 1.0  # G of the linear family (the quadratic family has G = 2)
    spread: float = 0.5  # how much the losses vary around their common direction
    exploration: float | None = None
    step: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "dim", int(require_number("dim", self.dim, low=1, integer=True)))
        object.__setattr__(self, "horizon", int(require_number("horizon", self.horizon, low=1, integer=True)))
        require_number("radius", self.radius, low=0, low_open=True)
        require_number("lipschitz", self.lipschitz, low=0, low_open=True)
        require_number("spread", self.spread, low=0)
        if self.loss not in LOSS_KINDS:
            raise ConfigurationError("loss", f"unknown {self.loss!r}; choose one of {', '.join(LOSS_KINDS)}")
        if self.exploration is not None:
            require_number("exploration", self.exploration, low=0, high=self.radius, low_open=True, high_open=True)
        if self.step is not None:
            require_number("step", self.step, low=0, low_open=True)

    def parameters(self, diameter: float, lipschitz: float, feedback_bound: float) -> tuple[float, float]:
        """``(delta, eta)``: the overrides where given, else the corrected optimum for these constants."""
        delta, eta = corrected_parameters(self.dim, self.horizon, diameter, lipschitz, feedback_bound)
        delta = self.exploration if self.exploration is not None else delta
        if self.exploration is None and delta >= self.radius:
            ratio = 2 * self.dim * feedback_bound * diameter / (3 * lipschitz) / self.radius**2
            need = ratio * ratio  # inf where it overflows (a feedback bound of 1e300 at a rate of 1e-300)
            least = math.ceil(need) if need < 1e18 else f"{need:.3g}"
            raise ConfigurationError(
                "horizon",
                f"the corrected exploration radius {delta:.3g} is not below "
                f"the radius {self.radius:g}; use T >= {least} or "
                f"set exploration",
            )
        if self.step is None:
            eta = diameter * delta / (self.dim * feedback_bound * math.sqrt(self.horizon))
        else:
            eta = self.step
        return delta, eta
