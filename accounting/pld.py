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
import math

from accounting import peers
from accounting.base import Unsupported
from accounting.mechanisms import Composition, Gaussian, Laplace, Sampling, SubsampledGaussian
from accounting.pld_gaussian import gaussian_pld
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


@functools.lru_cache(maxsize=8)
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
    releases = _gaussian_releases(event)
    if releases is not None:
        return _ComposedGaussians(releases, value_discretization_interval, accountant.neighboring_relation)
    accountant.compose(event)
    return accountant


def _gaussian_releases(event) -> list[tuple[float, float, int]] | None:
    """``(noise multiplier, sampling probability, count)`` per part of ``event`` when every part is ``count``
    Gaussian releases, Poisson-subsampled or not (``peers.dp_event``'s shape), with positive noise and rate;
    None otherwise (dp-accounting's accountant then composes it)."""
    import dp_accounting

    parts = event.events if isinstance(event, dp_accounting.ComposedDpEvent) else [event]
    releases = []
    for part in parts:
        count = 1
        while isinstance(part, dp_accounting.SelfComposedDpEvent):
            count, part = count * part.count, part.event
        rate = 1.0
        if isinstance(part, dp_accounting.PoissonSampledDpEvent):
            rate, part = part.sampling_probability, part.event
            if not 0 < rate <= 1:
                return None
        if not isinstance(part, dp_accounting.GaussianDpEvent) or not part.noise_multiplier > 0:
            return None
        releases.append((part.noise_multiplier, rate, count))
    return releases


class _ComposedGaussians:
    """What dp-accounting's ``PLDAccountant`` composes for Gaussian releases, the same calls in the same order:
    from the identity, per part either one Gaussian of multiplier ``z / sqrt(count)`` (un-subsampled releases
    compose to it) or one Poisson-subsampled release's PLD self-composed ``count`` times. A release's PLD is
    built by ``accounting.pld_gaussian`` (dp-accounting's construction, vectorised) and shared across counts
    (epsilon over rounds asks for several counts of one mechanism)."""

    def __init__(self, releases, interval: float, relation):
        from dp_accounting.pld import privacy_loss_distribution

        composed = privacy_loss_distribution.identity(value_discretization_interval=interval)
        for multiplier, rate, count in releases:
            if rate == 1.0:
                part = _one_release(multiplier / math.sqrt(count), 1.0, interval, relation)
            else:
                part = _one_release(multiplier, rate, interval, relation).self_compose(count)
            composed = composed.compose(part)
        self._pld = composed  # where dp-accounting's accountant keeps it (``accounting.cost`` reads it there)

    def get_epsilon(self, target_delta: float) -> float:
        return self._pld.get_epsilon_for_delta(target_delta)

    def get_delta(self, target_epsilon: float) -> float:
        return self._pld.get_delta_for_epsilon(target_epsilon)


@functools.lru_cache(maxsize=8)
def _one_release(noise_multiplier: float, sampling_probability: float, interval: float, relation):
    """The PLD of one Gaussian release of ``noise_multiplier`` (record norm), Poisson-subsampled at
    ``sampling_probability`` (1: not subsampled), as dp-accounting's ``from_gaussian_mechanism`` builds it."""
    return gaussian_pld(noise_multiplier, interval, sampling_probability, relation)


class PldAccountant:
    """Privacy-loss-distribution accountant (dp-accounting's PLD): a tight numerical upper bound, on a grid of
    spacing ``value_discretization_interval`` (coarsened when the noise is very small; the spacing used is in
    ``last_details``)."""

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
