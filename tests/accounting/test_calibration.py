"""Gaussian calibration: the analytic value meets the target exactly; the classic one fails for large
epsilon. References: Balle and Wang 2018 (analytic sigma), dp-accounting's PLD of the Gaussian."""

import pytest

from accounting import Composition, ConfigurationError, Gaussian, account_all
from accounting.calibration import (
    analytic_gaussian_noise_multiplier,
    calibrate_gaussian,
    calibrate_noise_multiplier,
    check_classic_calibration,
    classic_failure_threshold,
)


def test_classic_violation_at_large_epsilon():
    check = check_classic_calibration(10, 1e-5)
    assert check.violated and check.true_delta == pytest.approx(2.3e-5, rel=0.03)
    assert not check_classic_calibration(1, 1e-5).violated


def test_classic_failure_threshold_about_8_4():
    assert classic_failure_threshold(1e-5) == pytest.approx(8.4, abs=0.05)


@pytest.mark.parametrize("eps, delta", [(1.0, 1e-5), (2.0, 1e-5), (8.0, 1e-6)])
def test_analytic_calibration_is_tight_by_independent_pld(eps, delta):
    z = analytic_gaussian_noise_multiplier(eps, delta)
    pld_eps = account_all(Composition.of(Gaussian(z)), delta, ["pld"])[0].epsilon
    assert pld_eps == pytest.approx(eps, abs=0.01)
    assert pld_eps <= eps + 1e-3


def test_known_analytic_value():
    # Balle and Wang 2018: eps = 1, delta = 1e-5 needs sigma ~ 3.73 (classic: 4.84).
    assert analytic_gaussian_noise_multiplier(1.0, 1e-5) == pytest.approx(3.73, abs=0.01)
    assert calibrate_gaussian(1.0, 1e-5, 2.0, "classic").noise_std == pytest.approx(2 * 4.845, abs=0.01)


def test_bad_targets_name_the_field():
    for eps, delta, field in [(0, 1e-5, "epsilon"), (1, 1.0, "delta"), (1, 0, "delta")]:
        with pytest.raises(ConfigurationError) as info:
            analytic_gaussian_noise_multiplier(eps, delta)
        assert info.value.field == field
    with pytest.raises(ConfigurationError):
        calibrate_gaussian(1, 1e-5, method="magic")


def test_noise_calibration_matches_moments_reference():
    # The published z = 1 gives 15.17 under the moments accountant; calibrating for 15.17 returns ~1.
    result = calibrate_noise_multiplier(15.17, 29**-1.1, 0.35, 60, "moments")
    assert result.noise_multiplier == pytest.approx(1.0, rel=2e-3) and result.achieved_epsilon <= 15.17


def test_classic_formula_at_a_subnormal_delta():
    # 1.25 / 1e-320 overflows a float; the classic sigma sqrt(2 ln(1.25/delta))/epsilon is finite
    # (reference: mpmath at 50 digits). It was printed as inf.
    import mpmath

    delta = 1e-320
    with mpmath.workdps(50):
        reference = float(mpmath.sqrt(2 * mpmath.log(mpmath.mpf(1.25) / mpmath.mpf(delta))) / 10)
    check = check_classic_calibration(10.0, delta)
    assert check.noise_multiplier == pytest.approx(reference, rel=1e-12)
    assert check.noise_multiplier > check.analytic_noise_multiplier and not check.violated


def test_pld_calibration_is_the_smallest_noise_to_the_tolerance_by_dp_accounting():
    # Reference: dp-accounting's PLD called directly (same discretisation, 1e-4). The answer must meet the
    # target and 0.1% less noise must not; the search needs at most 8 PLD evaluations (plain bisection
    # from the old fixed bracket took 16 here).
    from dp_accounting import dp_event, pld

    def reference(z):
        accountant = pld.PLDAccountant(pld.pld_privacy_accountant.NeighborRel.ADD_OR_REMOVE_ONE, 1e-4)
        accountant.compose(dp_event.PoissonSampledDpEvent(0.1, dp_event.GaussianDpEvent(z)), 100)
        return accountant.get_epsilon(1e-5)

    evaluations = []
    result = calibrate_noise_multiplier(0.5, 1e-5, 0.1, 100, "pld", progress=lambda n, low, high: evaluations.append(n))
    assert reference(result.noise_multiplier) <= 0.5 < reference(result.noise_multiplier / 1.001)
    assert result.achieved_epsilon == pytest.approx(reference(result.noise_multiplier), rel=1e-9)
    assert len(evaluations) <= 8


def test_an_evaluation_predicted_to_be_slow_is_announced(monkeypatch):
    # `calibrate --steps 1e8` ran dp-accounting's PLD for hours without a line: the noise search called the
    # accountant directly, past the cost guard that makes `account` say what a long evaluation will take.
    # Here the prediction is forced (a slow evaluation would make this test slow); the answer is unchanged.
    import accounting.cost

    monkeypatch.setattr(accounting.cost, "estimate_seconds", lambda name, composition: (1234.0, "forced"))
    lines = []
    result = calibrate_noise_multiplier(2.0, 1e-5, 0.5, 10, "pld", announce=lines.append)
    assert lines and all(line.startswith("pld: about 1234 s") and "(forced)" in line for line in lines)
    monkeypatch.undo()
    assert result == calibrate_noise_multiplier(2.0, 1e-5, 0.5, 10, "pld", announce=lines.append)
