"""Synthetic heterogeneous GP objectives on [0, 1]^d, as in the seed's synthetic experiments.

A common function ``f`` and independent functions ``g_n`` are drawn from a GP with an SE kernel (via
``num_basis`` unnormalised random Fourier features, so sample paths are smooth). Agent n maximises
``f_n = (1 - h) f + h g_n``; ``h`` = heterogeneity in [0, 1] (0: identical agents, 1: independent).
Each f_n is rescaled to [0, 1] using its range over a dense reference grid, and observations carry
Gaussian noise of variance ``noise_var``. The utility is the simple regret ``max f_n - best f_n so far``,
with ``max f_n`` from the grid plus local refinement (clipped at 0 if a query beats that estimate).
"""

from __future__ import annotations

import numpy as np

from accounting.errors import require_number
from accounting.mechanisms import as_generator
from dpfed.fts.acquisition import LinearFunctions, maximise
from dpfed.fts.features import RandomFourierFeatures


class SyntheticGP:
    utility_name = "simple regret"

    def __init__(
        self,
        num_agents: int,
        dim: int,
        rng,
        lengthscale: float = 0.1,
        heterogeneity: float = 0.1,
        noise_var: float = 1e-4,
        num_basis: int = 256,
        grid_points: int = 4096,
    ):
        rng = as_generator(rng)
        self.num_agents = int(require_number("num_agents", num_agents, low=1, integer=True))
        self.dim = int(require_number("dim", dim, low=1, integer=True))
        h = require_number("heterogeneity", heterogeneity, low=0, high=1)
        self.noise_std = float(np.sqrt(require_number("objective_noise_var", noise_var, low=0)))
        self.features = RandomFourierFeatures.draw(self.dim, num_basis, lengthscale, rng, normalise=False)
        common = rng.standard_normal(num_basis)
        own = rng.standard_normal((self.num_agents, num_basis))
        weights = (1.0 - h) * common + h * own
        per_dim = max(2, int(round(grid_points ** (1.0 / self.dim))))
        axes = np.meshgrid(*[np.linspace(0, 1, per_dim)] * self.dim, indexing="ij")
        grid = np.stack([a.ravel() for a in axes], axis=-1)
        raw = LinearFunctions(self.features, weights)
        values = raw(grid)  # (N, G)
        low, high = values.min(axis=1), values.max(axis=1)
        span = np.maximum(high - low, 1e-12)
        self.functions = LinearFunctions(self.features, weights / span[:, None], -low / span)
        best = grid[np.argmax(values, axis=1)]
        _, refined = maximise(
            self.functions, self.dim, rng, candidates=256, refine_steps=5, refine_samples=64, start=best
        )
        self.optimum = np.maximum(refined, 1.0)

    def true_values(self, x) -> np.ndarray:
        """Noise-free f_n at per-agent points ``x`` (N, k, d) -> (N, k)."""
        return self.functions(np.asarray(x, dtype=float))

    def evaluate(self, x, rng):
        true = self.true_values(x)
        return true + self.noise_std * as_generator(rng).standard_normal(true.shape), true

    def utility(self, best_true) -> np.ndarray:
        return np.maximum(self.optimum - np.asarray(best_true, dtype=float), 0.0)
