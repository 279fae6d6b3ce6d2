"""The moments accountant exactly as the DP-FTS-DE paper computed its published epsilons.

Integer orders 2..256, the Poisson-subsampled Gaussian RDP by its binomial expansion (add/remove),
and the classic conversion eps = min_a T*RDP(a) + log(1/delta)/(a-1) (Abadi et al. 2016; tf-privacy's
``compute_rdp`` with the old ``get_privacy_spent``). Kept to reproduce published numbers; it is
looser than ``rdp`` and ``pld``.
"""

from __future__ import annotations

import math

import numpy as np

from accounting.base import Unsupported
from accounting.mechanisms import Composition, Gaussian, Neighbouring, Sampling, SubsampledGaussian
from accounting.rdp_curves import MOMENTS_ORDERS, classic_conversion, classic_delta, poisson_gaussian_rdp


def _part_rdp(mechanism) -> np.ndarray:
    if isinstance(mechanism, Gaussian):
        return MOMENTS_ORDERS / (2.0 * np.float64(mechanism.noise_multiplier) ** 2)
    if isinstance(mechanism, SubsampledGaussian):
        if mechanism.sampling is not Sampling.POISSON or mechanism.neighbouring is not Neighbouring.ADD_REMOVE:
            raise Unsupported("the paper's moments accountant covers Poisson sampling under add/remove only")
        return poisson_gaussian_rdp(mechanism.rate, mechanism.noise_multiplier, MOMENTS_ORDERS)
    raise Unsupported(f"the moments accountant covers Gaussian mechanisms, not {type(mechanism).__name__}")


class MomentsAccountant:
    name = "moments"

    def _totals(self, composition: Composition) -> np.ndarray:
        with np.errstate(all="ignore"):  # extreme noise: non-finite orders are skipped below
            return sum(count * _part_rdp(m) for m, count in composition.parts)

    def epsilon(self, composition: Composition, delta: float) -> float:
        """Classic conversion at the best integer order; ``inf`` when no order has a finite RDP."""
        eps = classic_conversion(self._totals(composition), MOMENTS_ORDERS, delta)
        eps = eps[np.isfinite(eps)]
        return max(float(np.min(eps)), 0.0) if len(eps) else math.inf

    def delta(self, composition: Composition, epsilon: float) -> float:
        deltas = classic_delta(self._totals(composition), MOMENTS_ORDERS, epsilon)
        deltas = deltas[np.isfinite(deltas)]
        return float(np.min(deltas)) if len(deltas) else 1.0
