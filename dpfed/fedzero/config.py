"""FedZero configuration, the step sizes of Corollary 4.2 and the seed's regret bounds (notes B.3).

Corollary 4.2: ``h = R / (L b_q(d) sqrt(n))`` and ``eta = R / (L sqrt(n d_1))``. Theorem 4.1 holds with an
unspecified universal constant C; ``theorem_bound`` evaluates its bracket with C = 1 (so the ratio
regret / bracket is the empirical C), ``explicit_bound`` the explicit-constant version of Appendix D.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from accounting.errors import ConfigurationError, require_number
from dpfed.fedzero.geometry import (
    GEOMETRIES,
    RANDOMISATIONS,
    Geometry,
    effective_dimension,
    smoothing_bias_constant,
)

ESTIMATORS = ("two-point", "one-point")


@dataclass(frozen=True)
class FedZeroConfig:
    """One FedZero problem: ``workers`` m, ``rounds`` n, ``dim`` d, the geometry (``l2``: ball and
    Euclidean regulariser, ``l1``: simplex and entropy; the losses are the matching norm losses),
    the estimator and randomisation, ``records`` contexts per worker, optional ``step``/``perturbation``
    overrides, and the confidence ``conf_delta`` of the high-probability bound."""

    dim: int = 10
    workers: int = 4
    rounds: int = 10_000
    geometry: str = "l2"
    estimator: str = "two-point"
    randomisation: str = "l1"
    records: int = 20
    step: float | None = None
    perturbation: float | None = None
    conf_delta: float = 0.05

    def __post_init__(self):
        for name, low in (("dim", 3), ("workers", 1), ("rounds", 1), ("records", 1)):
            object.__setattr__(self, name, int(require_number(name, getattr(self, name), low=low, integer=True)))
        if self.geometry not in GEOMETRIES:
            raise ConfigurationError("geometry", f"unknown {self.geometry!r}; choose one of {', '.join(GEOMETRIES)}")
        if self.estimator not in ESTIMATORS:
            raise ConfigurationError("estimator", f"unknown {self.estimator!r}; choose one of {', '.join(ESTIMATORS)}")
        if self.randomisation not in RANDOMISATIONS:
            raise ConfigurationError("randomisation", f"unknown {self.randomisation!r}; choose l1 or l2")
        for name in ("step", "perturbation"):
            if getattr(self, name) is not None:
                require_number(name, getattr(self, name), low=0, low_open=True)
        require_number("conf_delta", self.conf_delta, low=0, high=1, low_open=True, high_open=True)

    @property
    def space(self) -> Geometry:
        return Geometry(self.geometry, self.dim)

    @property
    def q(self) -> float:
        """The norm of the losses' Lipschitz condition (l1 losses: q = 1; l2 losses: q = 2)."""
        return 1.0 if self.geometry == "l1" else 2.0

    @property
    def d1(self) -> float:
        return effective_dimension(self.dim, self.space.p, self.q)

    def parameters(self, lipschitz: float = 1.0) -> tuple[float, float]:
        """``(eta, h)``: the overrides where given, else Corollary 4.2."""
        R, n = self.space.R, self.rounds
        eta = self.step or R / (lipschitz * math.sqrt(n * self.d1))
        h = self.perturbation or R / (lipschitz * smoothing_bias_constant(self.dim, self.q) * math.sqrt(n))
        return eta, h


def _logs(config: FedZeroConfig) -> tuple[float, float]:
    n, m, delta = config.rounds, config.workers, config.conf_delta
    l1 = math.log(1 + n / delta)
    return l1, math.log(math.log(1 + n * m) / delta)


def theorem_bound(config: FedZeroConfig, lipschitz: float = 1.0) -> float:
    """The bracket of Theorem 4.1 (C = 1) at the configured eta and h."""
    eta, h = config.parameters(lipschitz)
    n, m, R, L, d1 = config.rounds, config.workers, config.space.R, lipschitz, config.d1
    l1, log_l2 = _logs(config)
    bias = smoothing_bias_constant(config.dim, config.q) * L * h
    return (
        R**2 / eta
        + (bias + d1 * L**2 * eta) * n
        + eta * L**2 * d1 / m * l1**2 * (1 + l1 / m)
        + R * L * math.sqrt(d1) * (math.sqrt(n * log_l2 / m) + log_l2 / m)
    )


def explicit_bound(config: FedZeroConfig, lipschitz: float = 1.0) -> float:
    """The explicit-constant bound of Appendix D at the configured eta and h."""
    eta, h = config.parameters(lipschitz)
    n, m, R, L, d1 = config.rounds, config.workers, config.space.R, lipschitz, config.d1
    l1, log_l2 = _logs(config)
    bias = smoothing_bias_constant(config.dim, config.q) * L * h
    second = eta * 2e4 * L**2 * d1 / m * (5.19e9 * n + l1**2 * (9 + 5e8 * l1 / m))
    deviation = 2e7 * R * L * math.sqrt(d1) * (3 * math.sqrt(n * log_l2 / m) + 1.5 * log_l2 / m)
    return R**2 / (2 * eta) + (bias + d1 * L**2 * eta) * n + second + deviation
