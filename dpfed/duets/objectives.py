"""The four objectives of the DUETS seed's experiments (notes A.7), on fixed public candidate sets.

The domain is a fixed random candidate set (as in the seed's public code, notes A.7/A.8 option (a)):
``candidates`` points uniform in [0, 1]^d for Branin (d = 2) and Hartmann-4 (d = 4), and uniform on the
unit sphere of R^dim (normalised Gaussians) for the two functions of ``x^T theta*`` (the paper writes
the unit ball; the code and our brief use the sphere). ``theta*`` is uniform on the unit sphere.
Kernels: squared exponential ``exp(-|x - x'|^2 / (2 l^2))`` (kappa^2 = sup k(x, x) = 1), length scale 0.2
for Branin and 1 for the others, as in the seed. The optimum is the best candidate (regret is measured
on the candidate set, as the seed's code does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from accounting.errors import ConfigurationError

HARTMANN_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
HARTMANN_A = np.array([[10, 3, 17, 3.5], [0.05, 10, 17, 0.1], [3, 3.5, 1.7, 10], [17, 8, 0.05, 10]])
HARTMANN_P = 1e-4 * np.array(
    [[1312, 1696, 5569, 124], [2329, 4135, 8307, 3736], [2348, 1451, 3522, 2883], [4047, 8828, 8732, 5743]]
)


def branin(x: np.ndarray) -> np.ndarray:
    """Rescaled (Picheny et al. 2013), negated Branin on [0, 1]^2; maximum about 1.047394."""
    u, v = 15.0 * x[..., 0] - 5.0, 15.0 * x[..., 1]
    inner = (v - 5.1 * u**2 / (4 * math.pi**2) + 5 * u / math.pi - 6) ** 2
    return -(inner + (10 - 10 / (8 * math.pi)) * np.cos(u) - 44.81) / 51.95


def hartmann4(x: np.ndarray) -> np.ndarray:
    """sum_i alpha_i exp(-sum_j A_ij (x_j - P_ij)^2) on [0, 1]^4 (first four columns of the 6-D constants,
    not negated or rescaled, as the seed's code); maximum about 3.72984."""
    diff = x[..., None, :] - HARTMANN_P
    return np.exp(-(HARTMANN_A * diff**2).sum(axis=-1)) @ HARTMANN_ALPHA


def cosine(x: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """h1(x) = cos(3 x^T theta*)."""
    return np.cos(3.0 * (x @ theta))


def polynomial(x: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """h2(x) = u^3 - 3u^2 + 3u + 3 with u = x^T theta* (the paper's form; the code wraps it in cos)."""
    u = x @ theta
    return u**3 - 3 * u**2 + 3 * u + 3


# name -> (dimension or None for the sphere functions, default length scale, domain)
OBJECTIVES = {
    "branin": (2, 0.2, "cube"),
    "hartmann4": (4, 1.0, "cube"),
    "cosine": (None, 1.0, "sphere"),
    "polynomial": (None, 1.0, "sphere"),
}


@dataclass(frozen=True)
class DuetsObjective:
    """A test function tabulated on its public candidate set, with its kernel matrix."""

    name: str
    candidates: np.ndarray  # (M, d)
    values: np.ndarray  # (M,) noise-free f
    lengthscale: float
    kernel: np.ndarray = field(repr=False)  # (M, M) k(c_i, c_j)

    @property
    def dim(self) -> int:
        return int(self.candidates.shape[1])

    @property
    def optimum(self) -> float:
        return float(self.values.max())

    @property
    def size(self) -> int:
        return int(self.values.size)


def se_kernel(a: np.ndarray, b: np.ndarray, lengthscale: float) -> np.ndarray:
    """Squared-exponential kernel matrix exp(-|a_i - b_j|^2 / (2 l^2))."""
    sq = (a**2).sum(-1)[:, None] + (b**2).sum(-1)[None, :] - 2.0 * a @ b.T
    return np.exp(-np.maximum(sq, 0.0) / (2.0 * lengthscale**2))


def make_objective(
    name: str, candidates: int = 2000, seed: int = 0, dim: int = 10, lengthscale: float | None = None
) -> DuetsObjective:
    """Build objective ``name`` on ``candidates`` public points drawn from ``seed``."""
    if name not in OBJECTIVES:
        raise ConfigurationError("objective", f"unknown {name!r}; choose one of {', '.join(OBJECTIVES)}")
    fixed_dim, default_ls, domain = OBJECTIVES[name]
    rng = np.random.default_rng(seed)
    if domain == "cube":
        points = rng.random((int(candidates), fixed_dim))
        values = branin(points) if name == "branin" else hartmann4(points)
    else:
        theta = rng.standard_normal(int(dim))
        theta /= np.linalg.norm(theta)
        points = rng.standard_normal((int(candidates), int(dim)))
        points /= np.linalg.norm(points, axis=1, keepdims=True)
        values = cosine(points, theta) if name == "cosine" else polynomial(points, theta)
    ls = float(default_ls if lengthscale is None else lengthscale)
    return DuetsObjective(name, points, values, ls, se_kernel(points, points, ls))
