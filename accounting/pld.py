"""Tight accounting through dp-accounting's privacy-loss distributions (PLD).

dp-accounting's PLD is pessimistic by construction (its discretisation rounds losses up), so the
epsilon it reports is an upper bound, loose by at most about ``steps * value_discretization_interval``.
The interval is 1e-4 unless the noise is so small that the privacy-loss support would need more than
``MAX_POINTS`` grid points per release (memory blows up otherwise); it is then coarsened, and the
interval used is reported in the result details.

Un-subsampled Gaussian releases are analysed as the one Gaussian they equal (``accounting.shortcuts``):
the same privacy-loss distribution, one release's discretisation error, and instant at any steps.
"""

from __future__ import annotations

import functools

from accounting import peers
from accounting.base import Unsupported
from accounting.mechanisms import Composition, Gaussian, Laplace, Sampling, SubsampledGaussian
from accounting.shortcuts import collapsed

MAX_POINTS = 200_000
MAX_LOSS_RANGE = 1e12  # beyond, the coarsened grid overflows inside dp-accounting
MAX_STEPS = 10**9


def loss_range(mechanism) -> float:
    """Approximate width of one release's privacy-loss support (Gaussian tails at ~6 sigma)."""
    shift = peers.mean_shift(mechanism)
    if isinstance(mechanism, Laplace):
        return 2.0 * shift
    return shift * (shift + 12.0)


def discretisation_interval(composition: Composition, finest: float = 1e-4) -> float:
    """The PLD grid spacing: ``finest``, coarsened so one release needs at most ``MAX_POINTS`` points."""
    widest = max(loss_range(m) for m, _ in composition.parts)
    if not widest <= MAX_LOSS_RANGE:
        raise Unsupported(
            f"noise too small for dp-accounting's PLD grid (the privacy loss spans {widest:.3g}); see rdp or exact"
        )
    if composition.total_count > MAX_STEPS:
        raise Unsupported(
            f"more than {MAX_STEPS:.0e} releases: dp-accounting's PLD grid grows with the steps; see rdp or exact"
        )
    return max(finest, widest / MAX_POINTS)


@functools.lru_cache(maxsize=4)
def _accountant(composition: Composition, value_discretization_interval: float, relation=None):
    """dp-accounting's PLD of ``composition`` (composed once per process for the same composition, interval and
    relation, which are frozen values: asking for epsilon at several deltas, or delta at several epsilons, reuses
    it; ``get_epsilon``/``get_delta`` leave it unchanged)."""
    from dp_accounting import pld

    for mechanism, _ in composition.parts:
        if (
            isinstance(mechanism, SubsampledGaussian)
            and mechanism.sampling is not Sampling.POISSON
            and not peers.is_unsampled(mechanism)
        ):
            raise Unsupported("dp-accounting's PLD does not analyse fixed-size sampling without replacement")
        if not isinstance(mechanism, (Gaussian, Laplace, SubsampledGaussian)):
            raise Unsupported(f"no PLD for {type(mechanism).__name__}")
    relation = peers.composition_relation(composition) if relation is None else relation
    accountant = pld.PLDAccountant(peers.dpa_relation(relation), value_discretization_interval)
    event = peers.dp_event(composition, peers.PeerScale.RECORD_NORM, relation)
    if not accountant.supports(event):
        raise Unsupported("dp-accounting's PLD does not support this composition")
    accountant.compose(event)
    return accountant


class PldAccountant:
    name = "pld"

    def __init__(self, value_discretization_interval: float = 1e-4):
        self.value_discretization_interval = value_discretization_interval
        self.last_details: dict = {}

    def _prepared(self, composition: Composition):
        """The accountant for ``composition``: un-subsampled Gaussian releases as the one Gaussian they
        equal (``accounting.shortcuts``, exact), the relation taken from the original composition."""
        relation = peers.composition_relation(composition)
        target, note = collapsed(composition)
        interval = discretisation_interval(target, self.value_discretization_interval)
        self.last_details = {"value_discretization_interval": interval, "releases_composed": target.total_count, **note}
        return _accountant(target, interval, relation)

    def epsilon(self, composition: Composition, delta: float) -> float:
        return self._prepared(composition).get_epsilon(delta)

    def delta(self, composition: Composition, epsilon: float) -> float:
        return self._prepared(composition).get_delta(epsilon)
