"""Tight accounting through dp-accounting's privacy-loss distributions (PLD).

dp-accounting's PLD is pessimistic by construction (its discretisation rounds losses up), so the
epsilon it reports is an upper bound within roughly ``value_discretization_interval`` per composition.
"""

from __future__ import annotations

from accounting.base import Unsupported
from accounting.mechanisms import Composition, Neighbouring, Sampling, SubsampledGaussian


def _relation(composition: Composition):
    import dp_accounting

    relations = {m.neighbouring for m, _ in composition.parts if isinstance(m, SubsampledGaussian)}
    if len(relations) > 1:
        raise Unsupported("the composition mixes neighbouring relations")
    if Neighbouring.REPLACE_ONE in relations:
        return dp_accounting.NeighboringRelation.REPLACE_ONE
    return dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE


def _accountant(composition: Composition, value_discretization_interval: float):
    from dp_accounting import pld

    for mechanism, _ in composition.parts:
        if isinstance(mechanism, SubsampledGaussian) and mechanism.sampling is not Sampling.POISSON:
            raise Unsupported("dp-accounting's PLD does not analyse fixed-size sampling without replacement")
    accountant = pld.PLDAccountant(_relation(composition), value_discretization_interval)
    event = composition.to_dp_event()
    if not accountant.supports(event):
        raise Unsupported("dp-accounting's PLD does not support this composition")
    accountant.compose(event)
    return accountant


class PldAccountant:
    name = "pld"

    def __init__(self, value_discretization_interval: float = 1e-4):
        self.value_discretization_interval = value_discretization_interval

    def epsilon(self, composition: Composition, delta: float) -> float:
        return _accountant(composition, self.value_discretization_interval).get_epsilon(delta)

    def delta(self, composition: Composition, epsilon: float) -> float:
        return _accountant(composition, self.value_discretization_interval).get_delta(epsilon)
