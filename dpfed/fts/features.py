"""Random Fourier features (RFF) for the squared-exponential kernel, as used by FTS and DP-FTS-DE.

``k(x, x') = v exp(-||x - x'||^2 / (2 l^2))`` is approximated by ``phi(x)^T phi(x')`` with
``phi_raw(x) = sqrt(2/M) cos(s_j^T x + b_j)``, ``s_j ~ N(0, l^-2 I_d)``, ``b_j ~ U[0, 2 pi]``.
Following the DP-FTS-DE reference code, the features are then rescaled to norm exactly ``sqrt(v)``
(``phi = sqrt(v) phi_raw / ||phi_raw||``), which the paper's utility proof relies on (||phi|| <= 1 for v = 1).
The features are data independent, hence public; all agents share one instance. A batch of
independent runs stacks one draw per run (``stack``): ``frequencies`` (K, M, d), points (K, ..., d).
``on(backend)`` moves a draw to an array backend (``dpfed.arrays``); it then evaluates points of that
backend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accounting.errors import require_number
from accounting.mechanisms import as_generator
from dpfed.arrays import float_dtype, namespace_of


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

    def on(self, backend) -> RandomFourierFeatures:
        """The same draw with its arrays on ``backend`` (a ``dpfed.arrays.ArrayBackend``)."""
        freqs, phases = backend.asarray(self.frequencies), backend.asarray(self.phases)
        return RandomFourierFeatures(freqs, phases, self.variance, self.normalise)

    def __call__(self, x, dtype=np.float64):
        """Feature vectors of points ``x`` of shape (..., d): returns (..., M).

        For stacked features (leading trial axis K) ``x`` must have shape (K, ..., d). ``dtype``
        float32 evaluates the cosines in single precision (for scoring candidate points only). ``x`` is
        an array of the features' backend.
        """
        xp = namespace_of(self.phases)
        x = xp.asarray(x, dtype=xp.float64)
        if self.frequencies.ndim == 2:
            angle = x @ self.frequencies.mT + self.phases
        else:
            flat = xp.reshape(x, (x.shape[0], -1, x.shape[-1]))
            angle = flat @ self.frequencies.mT + self.phases[:, None, :]
            angle = xp.reshape(angle, tuple(x.shape[:-1]) + (self.num_features,))
        dtype = float_dtype(xp, dtype)
        raw = xp.cos(xp.astype(angle, dtype, copy=False))
        if self.normalise:
            norms = xp.sqrt(xp.sum(raw * raw, axis=-1, keepdims=True))  # = np.linalg.norm's arithmetic
            scale = math.sqrt(self.variance) / xp.clip(xp.astype(norms, xp.float64), min=1e-300)
            return raw * xp.astype(scale, dtype, copy=False)
        factor = math.sqrt(2.0 * self.variance / self.num_features)
        if xp is np:
            return raw * float(np.dtype(dtype).type(factor))
        return raw * float(np.dtype(str(dtype).split(".")[-1]).type(factor))  # rounded to ``dtype`` as on NumPy
