"""Batched Bayesian linear regression in random-feature space: every agent's posterior (of every trial).

Model (eq. (2) of the DP-FTS-DE paper, as in the reference code): ``y = phi(x)^T w + noise`` with prior
``w ~ N(0, I_M)`` and noise variance ``lam``. With ``G = Phi Phi^T + lam I`` (n x n) the posterior is
exactly sampled by Matheron's rule ``w = w0 + Phi^T G^-1 (y - Phi w0 - e)``, ``w0 ~ N(0, I_M)``,
``e ~ N(0, lam I_n)``, for any n (n <= M or n > M).

``G = L L^T`` is never refactorised: every observation borders the Cholesky factor, and the state kept
is ``Linv = L^-1``, ``U = L^-1 Phi`` and ``L^-1 y``, each updated in O(n M) per observation. A draw then
costs two (n x M) products per agent: ``w = w0 + U^T (L^-1 y - U w0 - Linv e)``. Histories of all agents
(and of all trials, a leading batch shape) have the same length, so every step is one batched product.
"""

from __future__ import annotations

import math

import numpy as np

from accounting.errors import require_number
from accounting.mechanisms import as_generator
from dpfed.arrays import device_of, namespace_of
from dpfed.fts.posterior_offsets import PosteriorOffsets
from dpfed.fts.weight_space import WeightSpacePosteriors

__all__ = ["FeaturePosteriors", "PosteriorOffsets", "feature_posteriors"]


def feature_posteriors(batch, features, noise_var: float, centre: bool = False, capacity: int = 16):
    """The cheaper exact representation for ``capacity`` observations: Matheron's rule (this module)
    while observations stay fewer than features, else weight space (``weight_space``)."""
    if features.num_features <= int(capacity):
        return WeightSpacePosteriors(batch, features, noise_var, centre)
    return FeaturePosteriors(batch, features, noise_var, centre, capacity)


class FeaturePosteriors(PosteriorOffsets):
    """Posteriors of the feature weights of independent regressions on shared features.

    ``batch`` is the number of regressions (agents) or a batch shape such as (trials, agents); the
    features may carry a leading trial axis (``RandomFourierFeatures.stack``). ``centre=True`` regresses
    ``y - mean(y)`` (per regression); the sampled function is then ``phi(x)^T w + offsets``. The reference
    code does not centre the shared model. ``capacity`` preallocates room for that many observations.
    """

    def __init__(self, batch, features, noise_var: float, centre: bool = False, capacity: int = 16):
        self.features = features
        self.noise_var = require_number("obs_noise_var", noise_var, low=0, low_open=True)
        self.centre = bool(centre)
        self.batch_shape = (int(batch),) if np.ndim(batch) == 0 else tuple(int(b) for b in batch)
        self.xp, self.device = namespace_of(features.phases), device_of(features.phases)
        self.count = 0
        self._allocate(max(int(capacity), 1))
        self._y_sum = self._zeros(self.batch_shape)

    def _allocate(self, capacity: int) -> None:
        """(Re)allocate the state for ``capacity`` observations, keeping the first ``count``."""
        b, m, n = self.batch_shape, self.features.num_features, self.count
        u, linv = self._zeros(b + (capacity, m)), self._zeros(b + (capacity, capacity))
        ly, l1 = self._zeros(b + (capacity,)), self._zeros(b + (capacity,))
        if n:
            u[..., :n, :], linv[..., :n, :n] = self._u[..., :n, :], self._linv[..., :n, :n]
            ly[..., :n], l1[..., :n] = self._ly[..., :n], self._l1[..., :n]
        self._u, self._linv, self._ly, self._l1 = u, linv, ly, l1

    def add(self, x, y, rng=None):
        """Add observations: ``x`` of shape batch + (k, d) or batch + (d,), ``y`` batch + (k,) or batch.

        With ``rng``, also return one posterior draw after the update, as ``sample(rng)`` would (same
        random numbers; the new row of U enters the draw without being read back).
        """
        x = self.xp.asarray(x, dtype=self.xp.float64)
        y = self.xp.asarray(y, dtype=self.xp.float64)
        if x.ndim == len(self.batch_shape) + 1:
            x, y = x[..., None, :], y[..., None]
        phi = self.features(x)
        for j in range(x.shape[-2] - (rng is not None)):
            self._border(phi[..., j, :], y[..., j])
        if rng is None:
            return None
        return self._border_and_sample(phi[..., -1, :], y[..., -1], as_generator(rng))

    def _border(self, phi, y) -> None:
        """Extend the factorisation by one observation (feature vector ``phi``, value ``y``)."""
        n = self._make_room()
        u, linv = self._u[..., :n, :], self._linv[..., :n, :n]
        proj = (u @ phi[..., None])[..., 0]  # L^-1 Phi phi
        diag = self._append_row(proj, phi, y, linv)
        self._u[..., n, :] = (phi - (proj[..., None, :] @ u)[..., 0, :]) / diag[..., None]

    def _border_and_sample(self, phi, y, rng):
        """``_border`` then ``sample``: Matheron's rule with the new row's products formed directly."""
        n, m = self._make_room(), self.features.num_features
        w0 = rng.standard_normal(self.batch_shape + (m,))
        noise = math.sqrt(self.noise_var) * rng.standard_normal(self.batch_shape + (n + 1,))
        u, linv = self._u[..., :n, :], self._linv[..., :n, :n]
        proj, u_w0 = (u @ phi[..., None])[..., 0], (u @ w0[..., None])[..., 0]  # L^-1 Phi [phi, w0]
        linv_noise = (linv @ noise[..., :n, None])[..., 0]
        diag = self._append_row(proj, phi, y, linv)
        xp = self.xp
        new_w0 = (xp.sum(phi * w0, axis=-1) - xp.sum(proj * u_w0, axis=-1)) / diag
        new_noise = xp.sum(self._linv[..., n, : n + 1] * noise, axis=-1)
        resid = self._whitened_targets() - xp.concat([u_w0, new_w0[..., None]], axis=-1)
        resid = resid - xp.concat([linv_noise, new_noise[..., None]], axis=-1)
        new_u = (phi - (proj[..., None, :] @ u)[..., 0, :]) / diag[..., None]
        self._u[..., n, :] = new_u
        return w0 + (resid[..., None, :n] @ u)[..., 0, :] + resid[..., n, None] * new_u

    def _make_room(self) -> int:
        if self.count == self._linv.shape[-1]:
            self._allocate(2 * self.count)
        return self.count

    def _append_row(self, proj, phi, y, linv):
        """Write row n of ``Linv``, ``L^-1 y`` and ``L^-1 1`` from ``proj = L^-1 Phi phi``; returns L[n, n]."""
        n = self.count
        xp = self.xp
        diag = xp.sqrt(xp.sum(phi * phi, axis=-1) + self.noise_var - xp.sum(proj * proj, axis=-1))
        self._linv[..., n, :n] = -(proj[..., None, :] @ linv)[..., 0, :] / diag[..., None]
        self._linv[..., n, n] = 1.0 / diag
        self._ly[..., n] = (y - xp.sum(proj * self._ly[..., :n], axis=-1)) / diag
        self._l1[..., n] = (1.0 - xp.sum(proj * self._l1[..., :n], axis=-1)) / diag
        self._y_sum = self._y_sum + y
        self.count = n + 1
        return diag

    def _whitened_targets(self):
        """``L^-1 (y - offsets)``, shape batch + (n,)."""
        n = self.count
        return self._ly[..., :n] - self.offsets[..., None] * self._l1[..., :n]

    def posterior_mean(self):
        """Posterior mean ``Phi^T G^-1 y`` of the weights, shape batch + (M,)."""
        return (self._whitened_targets()[..., None, :] @ self._u[..., : self.count, :])[..., 0, :]

    def sample(self, rng):
        """One exact posterior draw of the weights per regression, shape batch + (M,).

        With a ``TrialStreams`` whose trials are the leading batch axis, trial k draws exactly what a
        one-trial batch seeded with stream k draws.
        """
        rng = as_generator(rng)
        n, m = self.count, self.features.num_features
        w0 = rng.standard_normal(self.batch_shape + (m,))
        noise = math.sqrt(self.noise_var) * rng.standard_normal(self.batch_shape + (n,))
        if n == 0:
            return w0
        u, linv = self._u[..., :n, :], self._linv[..., :n, :n]
        resid = self._whitened_targets() - (u @ w0[..., None])[..., 0] - (linv @ noise[..., None])[..., 0]
        return w0 + (resid[..., None, :] @ u)[..., 0, :]
