"""``accounting.pld_gaussian`` (dp-accounting's Gaussian PLD construction with vectorised inverse privacy losses)
against dp-accounting itself: its public ``from_gaussian_mechanism`` and its ``PLDAccountant``, the references.
Deterministic (no randomness)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accounting.mechanisms import Composition, Gaussian, SubsampledGaussian
from accounting.peers import PeerScale, composition_relation, dp_event, dpa_relation

# (noise multiplier, sampling probability, sensitivity, grid interval): subsampled at several rates, not subsampled,
# small and large noise, a sensitivity other than 1; the grid 1e-3 (ten times fewer points than the 1e-4 our PLD
# accountant uses, which the first case keeps: dp-accounting's own construction is the slow reference here)
CASES = [(1.0, 0.35, 1.0, 1e-4), (0.9, 0.3, 1.0, 1e-3), (2.0, 0.01, 1.0, 1e-3), (0.5, 0.001, 1.0, 1e-3),
         (5.0, 0.9, 1.0, 1e-3), (0.6, 1.0, 1.0, 1e-3), (3.0, 0.2, 2.5, 1e-3), (1.3, 1.0, 0.4, 1e-3)]


# numpy's exp, log and log1p are not correctly rounded where it dispatches to AVX-512 kernels (measured on this
# project's machines: 4,551 of 100,000 np.exp values differ from math.exp in the last bits); dp-accounting computes
# with Python's math, so the masses agree to rounding, not bit for bit, there. A mass may differ by at most this much
# (measured: 6.1e-12 at most); the loss grid, the infinity mass and every other field stay exactly equal.
MASS_TOLERANCE = 1e-10


def _same_pmf(theirs, ours) -> None:
    """Same PMF class (dense or sparse) and every field equal (probabilities to ``MASS_TOLERANCE``)."""
    assert type(ours) is type(theirs)
    assert vars(ours).keys() == vars(theirs).keys()
    for name, value in vars(theirs).items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            np.testing.assert_allclose(vars(ours)[name], value, rtol=0, atol=MASS_TOLERANCE, err_msg=name)
        elif isinstance(value, np.ndarray):
            np.testing.assert_array_equal(vars(ours)[name], value, err_msg=name)
        elif isinstance(value, dict):  # a sparse PMF's {loss index: mass}
            assert value.keys() == vars(ours)[name].keys(), name
            assert all(abs(vars(ours)[name][k] - v) <= MASS_TOLERANCE for k, v in value.items()), name
        else:
            assert vars(ours)[name] == value, name


@pytest.mark.parametrize("pessimistic", [True, False])
@pytest.mark.parametrize("relation_name", ["ADD_OR_REMOVE_ONE", "REPLACE_ONE"])
@pytest.mark.parametrize("multiplier, rate, sensitivity, interval", CASES)
def test_the_same_distribution_as_dp_accountings_construction(multiplier, rate, sensitivity, interval, relation_name,
                                                              pessimistic):
    """Every probability of both PMFs equal to dp-accounting's, bit for bit (the inverse losses come from the same
    formulas; any last-digit change would show here): pessimistic (connect the dots, dp-accounting's default) and
    optimistic (privacy buckets rounded down, as ``accounting.replace_one_pair``'s lower bounds use it)."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld.privacy_loss_distribution import from_gaussian_mechanism

    from accounting.pld_gaussian import gaussian_pld

    relation = getattr(NeighboringRelation, relation_name)
    theirs = from_gaussian_mechanism(multiplier, sensitivity=sensitivity, value_discretization_interval=interval,
                                     sampling_prob=rate, neighboring_relation=relation,
                                     pessimistic_estimate=pessimistic, use_connect_dots=pessimistic)
    ours = gaussian_pld(multiplier, interval, rate, relation, sensitivity=sensitivity, pessimistic=pessimistic)
    _same_pmf(theirs._pmf_remove, ours._pmf_remove)
    _same_pmf(theirs._pmf_add, ours._pmf_add)
    assert ours._symmetric == theirs._symmetric


def test_the_special_points_go_to_dp_accountings_own_method():
    """At epsilon = -log(1 - q) (ADD) and log(1 - q) (REMOVE) dp-accounting takes its own branch; ours hands those
    points to it, and agrees with it elsewhere, on an explicit grid that contains them."""
    from dp_accounting.pld.privacy_loss_mechanism import AdjacencyType, GaussianPrivacyLoss

    from accounting.pld_gaussian import _vectorised_loss_class

    q = 0.3
    for adjacency, edge in ((AdjacencyType.ADD, -math.log(1 - q)), (AdjacencyType.REMOVE, math.log(1 - q))):
        epsilons = np.concatenate([np.linspace(-3, 3, 601), [edge, edge * (1 + 1e-12)]])
        theirs = GaussianPrivacyLoss(1.1, sampling_prob=q, adjacency_type=adjacency).get_delta_for_epsilon(epsilons)
        ours = _vectorised_loss_class()(1.1, sampling_prob=q, adjacency_type=adjacency).get_delta_for_epsilon(epsilons)
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("relation", ["add-remove", "replace-one"])
def test_mixed_compositions_are_dp_accountings_accountant(relation):
    """Compositions of subsampled and un-subsampled Gaussians (what DP-FTS-DE and FedZero compose): epsilon and delta
    equal to dp-accounting's PLDAccountant composing the same event."""
    import dp_accounting

    from accounting import pld as ours

    composition = Composition(parts=(
        (SubsampledGaussian(0.2, 1.5, neighbouring=relation), 40),
        (Gaussian(3.0, sensitivity=1.0), 5),
        (SubsampledGaussian(0.05, 0.9, neighbouring=relation), 200),
    ))
    own = composition_relation(composition)
    interval = ours.discretisation_interval(composition)
    direct = dp_accounting.pld.PLDAccountant(dpa_relation(own), interval)
    direct.compose(dp_event(composition, PeerScale.RECORD_NORM, own))
    mine = ours._accountant(composition, interval, own)
    assert isinstance(mine, ours._ComposedGaussians)
    for delta in (1e-5, 0.0246):  # equal to rounding (MASS_TOLERANCE's note)
        assert mine.get_epsilon(delta) == pytest.approx(direct.get_epsilon(delta), rel=1e-9)
    assert mine.get_delta(1.0) == pytest.approx(direct.get_delta(1.0), rel=1e-7)
