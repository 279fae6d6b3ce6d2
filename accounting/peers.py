"""The one crossing of a noise multiplier into a peer library (dp-accounting, opacus).

Our mechanisms state noise in their own units (``noise_multiplier * clip`` for ``SubsampledGaussian``,
``noise_multiplier * sensitivity`` for ``Gaussian``/``Laplace``). The peers divide the noise standard
deviation by different things, and under replace-one the difference is a factor of two:

- ``PeerScale.SENSITIVITY``: the L2 sensitivity of the released sum under the relation, i.e. the
  distance between the two neighbouring means (``2 * clip`` under replace-one). dp-accounting's RDP
  accountant (its Wang et al. fixed-size analysis and its plain Gaussian alpha / (2 z^2)) and opacus
  (add/remove only) read a multiplier this way.
- ``PeerScale.RECORD_NORM``: the norm bound of one record, as dp-accounting's ``GaussianDpEvent``
  docstring defines it. dp-accounting's PLD accountant reads a multiplier this way: under
  ``REPLACE_ONE`` it shifts the two worlds by +1 and -1 record norms itself.

Every accountant that hands a multiplier to a peer calls ``peer_noise_multiplier`` (directly or
through ``dp_event``), so the convention is decided in exactly one place.
"""

from __future__ import annotations

import enum

from accounting.base import Unsupported
from accounting.mechanisms import Composition, Gaussian, Laplace, Neighbouring, Sampling, SubsampledGaussian

SMALLEST_PEER_MULTIPLIER = 1e-150  # below (above the largest), z^2 under- (over)flows inside the peers
LARGEST_PEER_MULTIPLIER = 1e150


class PeerScale(enum.Enum):
    """What a peer library divides the noise standard deviation by."""

    SENSITIVITY = "L2 sensitivity under the relation"
    RECORD_NORM = "norm bound of one record"


def composition_relation(composition: Composition) -> Neighbouring:
    """The neighbouring relation a composition is analysed under (its subsampled parts say which).

    Un-subsampled ``Gaussian``/``Laplace`` parts declare their sensitivity for whatever relation the
    caller means, so they follow the subsampled parts; without any, the relation is add/remove.
    """
    relations = {m.neighbouring for m, _ in composition.parts if isinstance(m, SubsampledGaussian)}
    if len(relations) > 1:
        raise Unsupported("the composition mixes neighbouring relations")
    return relations.pop() if relations else Neighbouring.ADD_REMOVE


def mean_shift(mechanism) -> float:
    """Distance between the two neighbouring worlds' means, in units of the noise scale.

    For a Gaussian mechanism this is the GDP parameter mu of one release without subsampling.
    """
    if isinstance(mechanism, (Gaussian, Laplace)):
        return 1.0 / float(mechanism.noise_multiplier)
    if isinstance(mechanism, SubsampledGaussian):
        return mechanism.sensitivity / mechanism.noise_std
    raise Unsupported(f"no noise multiplier for {type(mechanism).__name__}")


def peer_noise_multiplier(mechanism, relation: Neighbouring | str, scale: PeerScale) -> float:
    """The noise multiplier a peer library must be given for one release of ``mechanism`` analysed
    under ``relation``, in the peer's ``scale`` (see the module docstring)."""
    relation = Neighbouring.parse(relation)
    own = getattr(mechanism, "neighbouring", relation)
    if own is not relation:
        raise Unsupported(f"a {own.value} mechanism cannot be analysed under {relation.value}")
    record_units = 2.0 if scale is PeerScale.RECORD_NORM and relation is Neighbouring.REPLACE_ONE else 1.0
    multiplier = record_units / mean_shift(mechanism)
    if not SMALLEST_PEER_MULTIPLIER <= multiplier <= LARGEST_PEER_MULTIPLIER:
        raise Unsupported(
            f"noise multiplier {multiplier:.3g} is outside what the peer libraries compute "
            "(its square under- or overflows); the exact accountant answers such extremes"
        )
    return multiplier


def is_unsampled(mechanism) -> bool:
    """True for a mechanism that releases on everybody (rate 1, or a fixed batch of the whole population)."""
    if not isinstance(mechanism, SubsampledGaussian):
        return True
    if mechanism.sampling is Sampling.POISSON:
        return mechanism.rate == 1.0
    return mechanism.batch_size == mechanism.population


def mechanism_event(mechanism, relation: Neighbouring, scale: PeerScale):
    """dp-accounting DpEvent of one release, its multiplier in the peer's ``scale``."""
    import dp_accounting

    if isinstance(mechanism, Laplace):
        return dp_accounting.LaplaceDpEvent(peer_noise_multiplier(mechanism, relation, scale))
    gaussian = dp_accounting.GaussianDpEvent(peer_noise_multiplier(mechanism, relation, scale))
    if is_unsampled(mechanism):
        return gaussian
    if mechanism.sampling is Sampling.POISSON:
        return dp_accounting.PoissonSampledDpEvent(float(mechanism.rate), gaussian)
    return dp_accounting.SampledWithoutReplacementDpEvent(mechanism.population, mechanism.batch_size, gaussian)


def dp_event(composition: Composition, scale: PeerScale = PeerScale.RECORD_NORM, relation=None):
    """dp-accounting DpEvent of a composition under ``relation`` (default: its own, see
    ``composition_relation``), multipliers in the ``scale`` of the dp-accounting accountant used."""
    import dp_accounting

    relation = composition_relation(composition) if relation is None else Neighbouring.parse(relation)
    events = [dp_accounting.SelfComposedDpEvent(mechanism_event(m, relation, scale), c) for m, c in composition.parts]
    return events[0] if len(events) == 1 else dp_accounting.ComposedDpEvent(events)


def to_dp_event(value, scale: PeerScale = PeerScale.RECORD_NORM):
    """dp-accounting DpEvent of a mechanism (one release) or a composition under its own relation,
    multipliers in ``scale`` (default: dp-accounting's record norm, as its PLD reads them)."""
    if isinstance(value, Composition):
        return dp_event(value, scale)
    return mechanism_event(value, composition_relation(Composition.of(value, 1)), scale)


def dpa_relation(relation: Neighbouring):
    """dp-accounting's name for one of our neighbouring relations."""
    import dp_accounting

    if relation is Neighbouring.REPLACE_ONE:
        return dp_accounting.NeighboringRelation.REPLACE_ONE
    return dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
