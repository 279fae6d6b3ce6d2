"""Synthetic convex losses on the Euclidean ball of radius R, with known constants (notes C.1, C.4).

``linear``: ``f_k(x) = <a_k, x>`` with ``||a_k|| = G`` (so the Lipschitz constant is G and
``|f_k| <= B = G R``). ``quadratic``: ``f_k(x) = (||x - c_k||^2 - D^2 / 2) / D`` with ``c_k`` in the
ball and ``D = 2 R`` (gradient ``2 (x - c_k) / D`` of norm <= 2, so G = 2, and ``|f_k| <= B = D / 2``).

A ``SyntheticLosses`` object holds K such functions: the loss sequence of an oblivious adversary
(``f_t`` is function ``t``) or a dataset of records (the round's loss is their mean). Canary probes
replace chosen functions by constants (``with_constants``): a constant is convex and 0-Lipschitz, and
within ``[-B, B]`` it keeps every constant above valid (a constant outside it tests the clipping of
the private variants; ``bound`` then no longer bounds that function).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from accounting.errors import ConfigurationError, require_number
from accounting.mechanisms import as_generator

LOSS_KINDS = ("linear", "quadratic")


def project_ball(x: np.ndarray, radius: float) -> np.ndarray:
    """Euclidean projection of the rows (last axis) of ``x`` onto the ball of ``radius``."""
    norms = np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]
    return x * np.minimum(1.0, radius / np.maximum(norms, 1e-300))


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@dataclass(frozen=True)
class SyntheticLosses:
    """K convex functions on the ball of radius ``radius`` (see the module docstring)."""

    kind: str
    params: np.ndarray  # (K, d): the a_k (linear) or the c_k (quadratic)
    radius: float = 1.0
    constants: dict = field(default_factory=dict)  # index -> constant value replacing f_index
    nominal_lipschitz: float | None = None  # the G the linear family was built with (||a_k|| = G)

    @classmethod
    def generate(
        cls,
        kind: str,
        count: int,
        dim: int,
        rng=None,
        *,
        radius: float = 1.0,
        lipschitz: float = 1.0,
        spread: float = 0.5,
    ) -> SyntheticLosses:
        """``count`` random functions around one common random direction w (noise ``spread``)."""
        if kind not in LOSS_KINDS:
            raise ConfigurationError("loss", f"unknown {kind!r}; choose one of {', '.join(LOSS_KINDS)}")
        count = int(require_number("count", count, low=1, integer=True))
        dim = int(require_number("dim", dim, low=1, integer=True))
        radius = require_number("radius", radius, low=0, low_open=True)
        require_number("spread", spread, low=0)
        rng = as_generator(rng)
        w = _unit(rng.standard_normal(dim))
        noise = rng.standard_normal((count, dim)) * spread / np.sqrt(dim)
        if kind == "linear":
            require_number("lipschitz", lipschitz, low=0, low_open=True)
            return cls(kind, float(lipschitz) * _unit(w + noise), float(radius), {}, float(lipschitz))
        return cls(kind, project_ball(radius * (0.5 * w + noise), radius), float(radius))

    # ----- constants --------------------------------------------------------------------------
    @property
    def count(self) -> int:
        return self.params.shape[0]

    @property
    def dim(self) -> int:
        return self.params.shape[1]

    @property
    def diameter(self) -> float:
        """D: the diameter of the ball."""
        return 2.0 * self.radius

    @cached_property
    def lipschitz(self) -> float:
        """G: a Lipschitz constant of every function on the ball."""
        if self.kind == "linear":
            measured = float(np.max(np.linalg.norm(self.params, axis=1)))
            return measured if self.nominal_lipschitz is None else max(self.nominal_lipschitz, measured - 1e-12)
        return 2.0

    @cached_property
    def bound(self) -> float:
        """B: a bound on |f| on the ball."""
        return self.lipschitz * self.radius if self.kind == "linear" else self.diameter / 2.0

    def with_constants(self, constants: dict[int, float]) -> SyntheticLosses:
        """A copy whose function ``index`` is the constant ``value`` for each item of ``constants``."""
        for index, value in constants.items():
            require_number("canary round", index, low=0, high=self.count - 1, integer=True)
            require_number("canary value", value)
        merged = {**self.constants, **{int(k): float(v) for k, v in constants.items()}}
        return SyntheticLosses(self.kind, self.params, self.radius, merged, self.nominal_lipschitz)

    # ----- evaluation -------------------------------------------------------------------------
    def value(self, index: int, points: np.ndarray) -> np.ndarray:
        """f_index at ``points`` of shape (..., d); returns shape (...)."""
        if index in self.constants:
            return np.full(points.shape[:-1], self.constants[index])
        p = self.params[index]
        if self.kind == "linear":
            return points @ p
        diff = points - p
        return (np.einsum("...i,...i->...", diff, diff) - self.diameter**2 / 2) / self.diameter

    def values_all(self, points: np.ndarray) -> np.ndarray:
        """Every f_k at ``points`` (..., d); returns shape (..., K) (the dataset view)."""
        if self.kind == "linear":
            out = points @ self.params.T
        else:
            sq = np.einsum("...i,...i->...", points, points)[..., None]
            cross = points @ self.params.T
            norms = np.einsum("ki,ki->k", self.params, self.params)
            out = (sq - 2 * cross + norms - self.diameter**2 / 2) / self.diameter
        for index, value in self.constants.items():
            out[..., index] = value
        return out

    def best_fixed_point(self, upto: int | None = None) -> np.ndarray:
        """The minimiser over the ball of the sum of the first ``upto`` functions (all by default)."""
        upto = self.count if upto is None else int(upto)
        keep = [k for k in range(upto) if k not in self.constants]  # constants do not move it
        if not keep:
            return np.zeros(self.dim)
        if self.kind == "linear":
            total = self.params[keep].sum(axis=0)
            norm = np.linalg.norm(total)
            return -self.radius * total / norm if norm > 0 else np.zeros(self.dim)
        return project_ball(self.params[keep].mean(axis=0), self.radius)
