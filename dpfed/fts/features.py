"""Random Fourier features (RFF) for the squared-exponential kernel, as used by FTS and DP-FTS-DE.

``k(x, x') = v exp(-||x - x'||^2 / (2 l^2))`` is approximated by ``phi(x)^T phi(x')`` with
``phi_raw(x) = sqrt(2/M) cos(s_j^T x + b_j)``, ``s_j ~ N(0, l^-2 I_d)``, ``b_j ~ U[0, 2 pi]``.
Following the DP-FTS-DE reference code, the features are then rescaled to norm exactly ``sqrt(v)``
(``phi = sqrt(v) phi_raw / ||phi_raw||``), which the paper's utility proof relies on (||phi|| <= 1 for v = 1).
The features are data independent, hence public; all agents share one instance. A batch of
independent runs stacks one draw per run (``stack``): ``frequencies`` (K, M, d), points (K, ..., d).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accounting.errors import require_number
from accounting.mechanisms import as_generator


@dataclass(frozen=True)
class RandomFourierFeatures:
    """A fixed draw of M random Fourier features on R^d (see module docstring)."""

    frequencies: np.ndarray  # (M, d)
    phases: np.ndarray  # (M,)
    variance: float = 1.0
    normalise: bool = True

    @classmethod
    def draw(
        cls,
        dim: int,
        num_features: int,
        lengthscale: float,
        rng,
        variance: float = 1.0,
        normalise: bool = True,
    ) -> RandomFourierFeatures:
        """Draw the spectral samples of an SE kernel with the given lengthscale and variance."""
        dim = int(require_number("dim", dim, low=1, integer=True))
        m = int(require_number("num_features", num_features, low=1, integer=True))
        lengthscale = require_number("lengthscale", lengthscale, low=0, low_open=True)
        variance = require_number("kernel_variance", variance, low=0, low_open=True)
        rng = as_generator(rng)
        freqs = rng.standard_normal((m, dim)) / lengthscale
        phases = rng.uniform(0.0, 2.0 * np.pi, size=m)
        return cls(freqs, phases, float(variance), bool(normalise))

    @property
    def num_features(self) -> int:
        return int(self.phases.shape[-1])

    @classmethod
    def stack(cls, draws) -> RandomFourierFeatures:
        """One feature set per trial along a leading axis (all draws must share M, d and the variance)."""
        draws = list(draws)
        return cls(
            np.stack([f.frequencies for f in draws]),
            np.stack([f.phases for f in draws]),
            draws[0].variance,
            draws[0].normalise,
        )

    def __call__(self, x, dtype=np.float64) -> np.ndarray:
        """Feature vectors of points ``x`` of shape (..., d): returns (..., M).

        For stacked features (leading trial axis K) ``x`` must have shape (K, ..., d). ``dtype``
        float32 evaluates the cosines in single precision (for scoring candidate points only).
        """
        x = np.asarray(x, dtype=float)
        if self.frequencies.ndim == 2:
            angle = x @ self.frequencies.T + self.phases
        else:
            flat = x.reshape(x.shape[0], -1, x.shape[-1])
            angle = flat @ np.swapaxes(self.frequencies, 1, 2) + self.phases[:, None, :]
            angle = angle.reshape(x.shape[:-1] + (self.num_features,))
        raw = np.cos(angle.astype(dtype, copy=False))
        if self.normalise:
            norms = np.linalg.norm(raw, axis=-1, keepdims=True)
            return raw * (np.sqrt(self.variance) / np.maximum(norms, 1e-300)).astype(dtype, copy=False)
        return raw * dtype(np.sqrt(2.0 * self.variance / self.num_features))
