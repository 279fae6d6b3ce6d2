"""Batched Bayesian linear regression in random-feature space: every agent's posterior at once.

Model (eq. (2) of the DP-FTS-DE paper, as in the reference code): ``y = phi(x)^T w + noise`` with prior
``w ~ N(0, I_M)`` and noise variance ``lam``. With ``Sigma = Phi^T Phi + lam I`` and
``nu = Sigma^-1 Phi^T y`` the posterior is ``N(nu, lam Sigma^-1)``.

All agents share the features and hold the same number n of observations at every round, so histories
are stacked along axis 0 and every linear-algebra call is batched over agents. Sampling is exact in
both regimes: for n <= M by Matheron's rule (``w = w0 + Phi^T (Phi Phi^T + lam I)^-1 (y - Phi w0 - e)``
with ``w0 ~ N(0, I)``, ``e ~ N(0, lam I)``; n x n systems), otherwise in weight space (batched Cholesky of
the M x M ``Sigma``).
"""

from __future__ import annotations

import numpy as np

from accounting.errors import require_number
from accounting.mechanisms import as_generator


class FeaturePosteriors:
    """Posterior of the feature weights of ``num_agents`` independent regressions on shared features.

    ``centre=True`` regresses ``y - mean(y)`` (per agent) instead of ``y``; the sampled function is
    then ``phi(x)^T w + offsets``. The reference code does not centre the shared model.
    """

    def __init__(self, num_agents: int, features, noise_var: float, centre: bool = False):
        self.features = features
        self.noise_var = require_number("obs_noise_var", noise_var, low=0, low_open=True)
        self.centre = bool(centre)
        self.num_agents = int(num_agents)
        self._phi = np.zeros((self.num_agents, 0, features.num_features))
        self._y = np.zeros((self.num_agents, 0))

    @property
    def count(self) -> int:
        return int(self._y.shape[1])

    def add(self, x, y) -> None:
        """Add one batch of observations per agent: ``x`` (N, k, d) or (N, d), ``y`` (N, k) or (N,)."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        if x.ndim == 2:
            x, y = x[:, None, :], y[:, None]
        self._phi = np.concatenate([self._phi, self.features(x)], axis=1)
        self._y = np.concatenate([self._y, y], axis=1)

    @property
    def offsets(self) -> np.ndarray:
        """Per-agent constant added to the sampled function (mean of y when centring, else 0)."""
        if not self.centre or self.count == 0:
            return np.zeros(self.num_agents)
        return self._y.mean(axis=1)

    def _targets(self) -> np.ndarray:
        return self._y - self.offsets[:, None]

    def posterior_mean(self) -> np.ndarray:
        """Posterior mean ``nu`` of the weights, (N, M), computed in weight space."""
        m = self._phi.shape[2]
        sigma = np.einsum("nkm,nkl->nml", self._phi, self._phi) + self.noise_var * np.eye(m)
        rhs = np.einsum("nkm,nk->nm", self._phi, self._targets())
        return np.linalg.solve(sigma, rhs[..., None])[..., 0]

    def sample(self, rng) -> np.ndarray:
        """One exact posterior draw of the weights per agent, shape (N, M)."""
        rng = as_generator(rng)
        n_agents, n, m = self._phi.shape
        lam = self.noise_var
        if n <= m:
            w0 = rng.standard_normal((n_agents, m))
            noise = np.sqrt(lam) * rng.standard_normal((n_agents, n))
            if n == 0:
                return w0
            gram = self._phi @ np.swapaxes(self._phi, 1, 2) + lam * np.eye(n)
            resid = self._targets() - (self._phi @ w0[..., None])[..., 0] - noise
            alpha = np.linalg.solve(gram, resid[..., None])
            return w0 + (np.swapaxes(self._phi, 1, 2) @ alpha)[..., 0]
        sigma = np.swapaxes(self._phi, 1, 2) @ self._phi + lam * np.eye(m)
        chol = np.linalg.cholesky(sigma)
        rhs = np.einsum("nkm,nk->nm", self._phi, self._targets())
        eps = rng.standard_normal((n_agents, m))
        u = np.linalg.solve(chol, rhs[..., None])  # L^-1 b
        both = np.linalg.solve(np.swapaxes(chol, 1, 2), np.concatenate([u, eps[..., None]], axis=2))
        return both[..., 0] + np.sqrt(lam) * both[..., 1]
