"""The GP surrogate of DUETS (notes A.2): exact posterior variance and the Nystrom (sparse) model.

All points are indices into the objective's public candidate set, so every kernel matrix is a slice of
the precomputed candidate kernel.

Whitening. The seed writes ``z_S(x) = K_SS^{-1/2} k_S(x)``. We whiten with the inverse Cholesky factor
instead, ``z_S(x) = L^{-1} k_S(x)`` with ``L L^T = K_SS + jitter I``: every formula of A.2 depends on the
whitening W only through ``W^T W = K_SS^{-1}``, so the mean and variance are exactly the equivalent forms
without ``K^{-1/2}`` (``k_S^T (lam K_SS + K_SX K_XS)^{-1} K_SX Y`` etc.; a test checks this against those
forms), and ``|z_S(x)|^2 = k_S^T (K_SS + jitter)^{-1} k_S <= k(x, x) = kappa^2`` still holds (the key
sensitivity bound of A.9). Rows are rescaled to norm <= kappa to absorb rounding.

Normalisation convention (the caveat of A.2, inconsistency 5 of A.6): the seed's ``sigma~^2`` is the
lambda-normalised variance (``lam sigma~^2 = sigma^2`` when S = X). We use ``lam sigma~^2`` as the
approximation of the exact posterior variance ``sigma^2`` (eq. 4), i.e. ``scaled_variance`` below, so
that beta keeps the calibration of Lemma 2.5 wherever it multiplies a surrogate standard deviation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

KAPPA = 1.0  # sup_x k(x, x) of the unit-variance SE kernel


def exact_posterior_variance(kernel: np.ndarray, data: np.ndarray, targets: np.ndarray, lam: float) -> np.ndarray:
    """sigma^2(x) = k(x,x) - k_D(x)^T (lam I + K_DD)^{-1} k_D(x) for every target index (eq. 4)."""
    gram = kernel[np.ix_(data, data)] + lam * np.eye(data.size)
    chol = linalg.cholesky(gram, lower=True)
    w = linalg.solve_triangular(chol, kernel[np.ix_(data, targets)], lower=True)
    return np.maximum(np.diag(kernel)[targets] - (w**2).sum(axis=0), 0.0)


@dataclass(frozen=True)
class NystromFeatures:
    """z_S(x) = L^{-1} k_S(x) for the inducing candidate indices ``inducing`` (length r, may be 0)."""

    inducing: np.ndarray
    chol: np.ndarray  # (r, r) lower Cholesky factor of K_SS + jitter I

    @classmethod
    def build(cls, kernel: np.ndarray, inducing: np.ndarray, jitter: float) -> NystromFeatures:
        inducing = np.asarray(inducing, dtype=int)
        gram = kernel[np.ix_(inducing, inducing)] + jitter * np.eye(inducing.size)
        chol = linalg.cholesky(gram, lower=True) if inducing.size else np.zeros((0, 0))
        return cls(inducing, chol)

    @property
    def rank(self) -> int:
        return int(self.inducing.size)

    def __call__(self, kernel: np.ndarray, points: np.ndarray) -> np.ndarray:
        """Features of candidate indices ``points`` (any shape): array of shape points.shape + (r,)."""
        flat = np.asarray(points, dtype=int).reshape(-1)
        if self.rank == 0:
            return np.zeros(np.shape(points) + (0,))
        z = linalg.solve_triangular(self.chol, kernel[np.ix_(self.inducing, flat)], lower=True).T
        norms = np.linalg.norm(z, axis=1, keepdims=True)
        z *= np.minimum(1.0, KAPPA / np.maximum(norms, 1e-300))
        return z.reshape(np.shape(points) + (self.rank,))


@dataclass(frozen=True)
class SparseModel:
    """The server's sparse GP: A = lam I + Z^T Z over all epoch points (public), and its solves."""

    lam: float
    chol: np.ndarray  # (r, r) lower Cholesky factor of A

    @classmethod
    def build(cls, features: np.ndarray, lam: float) -> SparseModel:
        """``features``: (m, r) rows z_S(x_i) of the union of the epoch's points."""
        r = features.shape[-1]
        gram = lam * np.eye(r) + features.T @ features
        return cls(float(lam), linalg.cholesky(gram, lower=True) if r else np.zeros((0, 0)))

    def solve(self, vectors: np.ndarray) -> np.ndarray:
        """A^{-1} s for s of shape (..., r) (eq. 8: v_bar = A^{-1} sum_n v_n)."""
        vectors = np.asarray(vectors, dtype=float)
        if vectors.shape[-1] == 0:
            return vectors.copy()
        flat = vectors.reshape(-1, vectors.shape[-1]).T
        out = linalg.cho_solve((self.chol, True), flat)
        return out.T.reshape(vectors.shape)

    def mean(self, features: np.ndarray, v_bar: np.ndarray) -> np.ndarray:
        """mu~(x) = z_S(x)^T v_bar for feature rows (M, r) and v_bar (..., r): shape (..., M)."""
        return np.asarray(v_bar) @ features.T

    def scaled_variance(self, features: np.ndarray) -> np.ndarray:
        """lam sigma~^2(x) = k(x,x) - |z|^2 + lam z^T A^{-1} z (our convention: approximates sigma^2)."""
        if features.shape[-1] == 0:
            return np.full(features.shape[0], KAPPA**2)
        w = linalg.solve_triangular(self.chol, features.T, lower=True)
        sq = (features**2).sum(axis=1)
        return np.maximum(KAPPA**2 - sq + self.lam * (w**2).sum(axis=0), 0.0)

    def noise_gain(self, features: np.ndarray) -> np.ndarray:
        """|A^{-1} z_S(x)| per feature row: how much released-sum noise moves mu~(x) (A.9)."""
        if features.shape[-1] == 0:
            return np.zeros(features.shape[0])
        return np.linalg.norm(self.solve(features), axis=1)
