"""Exact rewrites of a composition that make a peer accountant fast without changing what it bounds.

A composition of Gaussian mechanisms without subsampling, with mean shifts mu_1..mu_k (each run c_i
times, mu = sensitivity / noise std), has exactly the privacy-loss distribution of ONE Gaussian
mechanism with mu = sqrt(sum_i c_i mu_i^2): the privacy loss of one release is N(mu_i^2 / 2, mu_i^2)
under either world, and independent Gaussian losses add (Dong, Roth, Su 2019, Corollary 3.3; the
same identity ``accounting.exact`` uses). dp-accounting's PLD of that one Gaussian therefore bounds
the same privacy curve as its PLD of the k-fold composition: both are pessimistic (upper) bounds on
the same tight epsilon, the one-release version with one release's discretisation error instead of k,
at the cost of one release instead of minutes for 10^4. Measured against the k-fold path (tests):
equal to 1e-6 relative at 10 to 1000 releases; at mu of 50 and more dp-accounting's one-Gaussian PLD
stays about 1 above the closed form (0.02 to 0.06 % at epsilon 1700 to 5400), still an upper bound.
Subsampled or Laplace parts are left alone: their compositions have no such closed form.
"""

from __future__ import annotations

import math

from accounting import peers
from accounting.mechanisms import Composition, Gaussian, SubsampledGaussian


def one_gaussian(composition: Composition) -> Gaussian | None:
    """The single Gaussian (sensitivity 1) equivalent to ``composition``, or None if there is none (a
    subsampled or Laplace part, a single release already, or a mu beyond what the peers compute)."""
    if composition.total_count == 1:
        return None  # nothing to gain
    squares = 0.0
    for mechanism, count in composition.parts:
        if not isinstance(mechanism, (Gaussian, SubsampledGaussian)) or not peers.is_unsampled(mechanism):
            return None
        shift = peers.mean_shift(mechanism)
        if not shift < 1e149:  # its square would overflow (a float's ** raises OverflowError)
            return None
        squares += count * shift**2
    mu = math.sqrt(squares)
    if not (math.isfinite(mu) and 1e-149 < mu < 1e149):
        return None  # extremes keep the original path, which says what it cannot do
    return Gaussian(1.0 / mu)


def collapsed(composition: Composition) -> tuple[Composition, dict]:
    """``composition`` rewritten as one Gaussian where that is exact, and details saying so."""
    single = one_gaussian(composition)
    if single is None:
        return composition, {}
    mu = 1.0 / single.noise_multiplier
    note = (
        f"{composition.total_count} un-subsampled Gaussian releases analysed as one Gaussian with "
        f"mu = {mu:.6g} (the same privacy-loss distribution)"
    )
    return Composition.of(single, 1), {"composition_collapsed": note}
