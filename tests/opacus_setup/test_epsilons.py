"""The analyses of ``attacks.opacus_checks.epsilons`` against dp-accounting called directly and closed forms."""

import pytest
from dp_accounting import dp_event as dpe
from dp_accounting.pld import pld_privacy_accountant

from attacks.opacus_checks import epsilons as eps
from attacks.opacus_checks.noise import measurement_batch_sizes

DELTA = 1e-5


def _pld(event, steps):
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(dpe.SelfComposedDpEvent(event, steps))
    return accountant.get_epsilon(DELTA)


def test_poisson_row_is_dp_accountings_pld():
    expected = _pld(dpe.PoissonSampledDpEvent(0.05, dpe.GaussianDpEvent(1.2)), 40)
    assert eps.poisson_epsilon(0.05, 1.2, 40, DELTA)[0] == pytest.approx(expected, rel=2e-3)


def test_once_per_epoch_is_gaussian_of_sensitivity_two_clips():
    # std z C and shift 2C per epoch: dp-accounting's Gaussian of multiplier z / 2, once per epoch
    expected = _pld(dpe.GaussianDpEvent(0.75), 4)
    value, how = eps.once_per_epoch_epsilon(1.5, 4, DELTA)
    assert value == pytest.approx(expected, rel=1e-2) and how.startswith("upper bound")


def test_one_draw_with_replacement_is_poisson_at_half_the_multiplier():
    # one draw per batch: the record is in it with probability p and then shifts the sum by 2C, i.e. Poisson
    # at rate p of a Gaussian of multiplier z / 2 (the mixture PLD is pessimistic: at most 2 % above)
    expected = _pld(dpe.PoissonSampledDpEvent(0.1, dpe.GaussianDpEvent(1.0)), 50)
    value = eps.with_replacement_epsilon(1, 0.1, 2.0, 50, DELTA)[0]
    assert expected * (1 - 1e-3) <= value <= expected * 1.02


def test_revealed_batch_size_adds_little_for_large_populations_and_much_for_small():
    # the batch size of 5000 records says almost nothing (within 3 % of Poisson); of 20 records, a lot
    large = eps.revealed_batch_size_epsilon(5000, 0.05, 1.0, 30, DELTA)[0]
    poisson_large = _pld(dpe.PoissonSampledDpEvent(0.05, dpe.GaussianDpEvent(1.0)), 30)
    assert large == pytest.approx(poisson_large, rel=0.03)
    small = eps.revealed_batch_size_epsilon(20, 0.1, 1.0, 100, DELTA)[0]
    assert small > 1.2 * _pld(dpe.PoissonSampledDpEvent(0.1, dpe.GaussianDpEvent(1.0)), 100)


def test_opacus_epsilon_is_opacus_rdp_accountant():
    from opacus.accountants import RDPAccountant

    accountant = RDPAccountant()
    for _ in range(30):
        accountant.step(noise_multiplier=1.1, sample_rate=0.02)
    assert eps.opacus_epsilon("rdp", 1.1, 0.02, 30, DELTA) == pytest.approx(accountant.get_epsilon(DELTA))


def test_measurement_batch_sizes():
    assert measurement_batch_sizes(31.0, 569) == (7, 31, 62)
    assert measurement_batch_sizes(1.0, 5) == (1, 2)
