"""The two geometries of FedZero (notes B.1-B.3) and the seed's constants.

``l2``: Theta is the unit Euclidean ball, ``V = ||x||^2 / 2`` (1-strongly convex w.r.t. l2, R = 1/sqrt 2),
FTRL iterate ``x = Proj_Theta(eta z)`` (lazy projection). ``l1``: Theta is the probability simplex,
``V`` the negative entropy (1-strongly convex w.r.t. l1, R = sqrt(log d)), iterate ``softmax(eta z)``.

Directions: ``l1`` randomisation draws zeta uniform on the l1 sphere (normalised Laplace vector,
Schechtman-Zinn) and uses ``sign(zeta)`` (sign(0) = 1); ``l2`` draws zeta uniform on the l2 sphere and
uses zeta itself (Sec. 6 of the seed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError

GEOMETRIES = ("l2", "l1")
RANDOMISATIONS = ("l1", "l2")


def project_unit_ball(x: np.ndarray) -> np.ndarray:
    norms = np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]
    return x * np.minimum(1.0, 1.0 / np.maximum(norms, 1e-300))


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class Geometry:
    """Theta, the regulariser V (strongly convex w.r.t. l_p) and its range R^2 >= sup V - inf V."""

    name: str
    dim: int

    def __post_init__(self):
        if self.name not in GEOMETRIES:
            raise ConfigurationError("geometry", f"unknown {self.name!r}; choose one of {', '.join(GEOMETRIES)}")
        if self.dim < 3:
            raise ConfigurationError("dim", f"the seed's constants need d >= 3, got {self.dim}")

    @property
    def p(self) -> float:
        return 2.0 if self.name == "l2" else 1.0

    @property
    def R(self) -> float:
        return 1.0 / math.sqrt(2.0) if self.name == "l2" else math.sqrt(math.log(self.dim))

    def iterate(self, dual: np.ndarray, step: float) -> np.ndarray:
        """``argmax_x {eta <z, x> - V(x)}`` over Theta for dual vectors ``z`` (rows)."""
        if self.name == "l2":
            return project_unit_ball(step * dual)
        return softmax(step * dual)

    def start(self, runs: int) -> np.ndarray:
        return self.iterate(np.zeros((runs, self.dim)), 1.0)


def sample_directions(rng: np.random.Generator, shape: tuple[int, ...], dim: int, randomisation: str):
    """``(zeta, w)`` of shape ``shape + (dim,)``: zeta uniform on the l1 (or l2) sphere and the vector w the
    estimate multiplies (``sign(zeta)`` for l1, ``zeta`` for l2)."""
    if randomisation == "l1":
        xi = rng.laplace(size=shape + (dim,))
        zeta = xi / np.abs(xi).sum(axis=-1, keepdims=True)
        return zeta, np.where(zeta >= 0, 1.0, -1.0)
    g = rng.standard_normal(shape + (dim,))
    zeta = g / np.linalg.norm(g, axis=-1, keepdims=True)
    return zeta, zeta


def smoothing_bias_constant(dim: int, q: float) -> float:
    """b_q(d) of the seed: ``q d^(1/q) / (d+1)`` for q < log d, else ``e log d / (d+1)``."""
    if q < math.log(dim):
        return q * dim ** (1.0 / q) / (dim + 1)
    return math.e * math.log(dim) / (dim + 1)


def effective_dimension(dim: int, p: float, q: float) -> float:
    """d_1 = d^(1 + 2/min(q, 2) - 2/p)."""
    return dim ** (1.0 + 2.0 / min(q, 2.0) - 2.0 / p)
