"""What the two posterior representations (``agents.FeaturePosteriors``, Matheron's rule, and
``weight_space.WeightSpacePosteriors``) share: the batch, the centring offsets and the array backend.

Its own module so that both representations build on it without importing each other.
"""

from __future__ import annotations

import numpy as np


class PosteriorOffsets:
    """What both posterior representations share: the batch, the centring offsets and the array backend
    (``xp``, ``device``: the features')."""

    batch_shape: tuple[int, ...]
    centre: bool
    count: int
    _y_sum: np.ndarray

    def _zeros(self, shape):
        return self.xp.zeros(shape, dtype=self.xp.float64, device=self.device)

    @property
    def num_agents(self) -> int:
        return self.batch_shape[-1]

    @property
    def offsets(self):
        """Per-regression constant added to the sampled function (mean of y when centring, else 0)."""
        if not self.centre or self.count == 0:
            return self._zeros(self.batch_shape)
        return self._y_sum / self.count
