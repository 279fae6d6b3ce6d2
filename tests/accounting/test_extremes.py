"""Clearly non-private (or perfectly private) configurations get an answer, never "every accountant
failed": epsilon may be inf (status ok), never NaN or negative. References are closed forms."""

import json
import math

import pytest

from accounting import Composition, SubsampledGaussian, account_all
from reports.cli import main
from tests.accounting.test_peers import closed_form_epsilon

ALL = ["moments", "rdp", "pld", "prv", "exact", "dpa-rdp"]


def answers(mechanism, steps, delta):
    results = {r.name: r for r in account_all(Composition.of(mechanism, steps), delta, ALL)}
    for r in results.values():
        assert r.status in ("ok", "unsupported"), (r.name, r.reason)
        if r.ok:
            assert not math.isnan(r.epsilon) and r.epsilon >= 0
        else:
            assert r.reason
    return results


def test_noiseless_release_is_not_private_below_its_exposure():
    # Noise 1e-300: each release shows whether the canary was sampled; it is sampled at least once
    # with probability 1 - 0.65^60, so no finite epsilon holds for any smaller delta.
    results = answers(SubsampledGaussian(0.35, 1e-300), 60, 1e-5)
    assert results["exact"].epsilon == math.inf
    assert all(r.epsilon == math.inf for r in results.values() if r.ok)  # upper bounds agree


def test_noiseless_release_is_private_above_its_exposure():
    exposure = 1 - (1 - 1e-3) ** 3
    results = answers(SubsampledGaussian(1e-3, 1e-300), 3, 2 * exposure)
    assert results["exact"].epsilon == 0.0
    assert answers(SubsampledGaussian(1e-3, 1e-300), 3, exposure / 2)["exact"].epsilon == math.inf


def test_noiseless_unsampled_releases_are_explained_not_failed():
    # q = 1 and several releases: the one-Gaussian rewrite of PLD squared a mean shift of 1e300 and failed with
    # OverflowError; it now leaves such extremes to the original path, which says what it cannot do.
    results = answers(SubsampledGaussian(1.0, 1e-300), 100, 1e-5)
    assert results["exact"].epsilon == math.inf and results["pld"].status == "unsupported"


def test_subnormal_noise_is_not_private_by_our_rdp_too():
    # z = 5e-324 (the smallest subnormal): our RDP accountant failed with ZeroDivisionError (sigma / 12 is 0)
    results = answers(SubsampledGaussian(0.1, 5e-324), 10, 1e-5)
    assert results["rdp"].ok and results["rdp"].epsilon == math.inf == results["exact"].epsilon


def test_huge_noise_is_perfectly_private():
    results = answers(SubsampledGaussian(0.35, 1e300), 60, 1e-5)
    assert results["exact"].epsilon == 0.0
    assert all(r.epsilon < 0.05 for r in results.values() if r.ok)  # RDP: conversion term only


def test_huge_step_counts_by_closed_form():
    # 1e12 Gaussian releases are one Gaussian with mu = 1e6 (z = 1).
    results = answers(SubsampledGaussian(1.0, 1.0), 10**12, 1e-5)
    assert results["exact"].epsilon == pytest.approx(closed_form_epsilon(1e6, 1e-5), rel=1e-9)
    assert results["rdp"].epsilon >= results["exact"].epsilon


@pytest.mark.parametrize(
    "rate, noise, steps, delta",
    [
        (1e-300, 1.0, 60, 1e-5),
        (0.35, 1.0, 1, 0.999999),
        (0.35, 1e-10, 60, 1e-5),
        (1.0, 1e-300, 1, 0.5),
    ],
)
def test_absurd_inputs_answer_or_explain(rate, noise, steps, delta):
    results = {r.name: r for r in account_all(Composition.of(SubsampledGaussian(rate, noise), steps), delta, ALL)}
    assert any(r.ok for r in results.values())
    for r in results.values():
        assert r.epsilon is None or (not math.isnan(r.epsilon) and r.epsilon >= 0)


def test_cli_prints_infinity_and_exits_3_only_when_nobody_answers(capsys):
    noiseless = "--rate 0.35 --noise 1e-300 --steps 60 --delta 1e-5 --format json"
    assert main(["account", *noiseless.split()]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["accountants"]}
    assert rows["exact"]["status"] == "ok" and rows["exact"]["epsilon"] == "inf"
    nobody = "--rate 0.35 --noise 1 --steps 60 --delta 1e-5 --sampling fixed-size --population 29 --accountants rdp,pld"
    assert main(["account", *nobody.split()]) == 3
    assert "no accountant could answer" in capsys.readouterr().out


def test_moments_is_finite_at_a_subnormal_delta():
    # log(1/delta) overflowed for delta below ~5.6e-309, so the moments accountant said inf (and
    # `calibrate --accountant moments` found no noise). Reference: T Gaussian releases (q = 1, z = 1)
    # have RDP T a / 2; the classic conversion over the integer orders 2..256 in closed form.
    delta, steps = 1e-320, 3
    reference = min(steps * a / 2 - math.log(delta) / (a - 1) for a in range(2, 257))
    result = account_all(Composition.of(SubsampledGaussian(1.0, 1.0), steps), delta, ["moments"])[0]
    assert result.ok and result.epsilon == pytest.approx(reference, rel=1e-9)


def _mp_delta(mu: float, epsilon: float, digits: int):
    import mpmath

    with mpmath.workdps(digits):
        m, e = mpmath.mpf(mu), mpmath.mpf(epsilon)
        return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)


def test_gaussian_profile_at_huge_noise_against_mpmath():
    # mu = 2.8e-16 (noise 3.6e15): the float formula cancelled to delta(1e-15) = 0 (mpmath: 1.12e-20) and the
    # exact accountant answered epsilon 0 at delta 1e-300; the answer must meet delta, 1e-9 less must not
    from accounting.exact import gaussian_delta, gaussian_epsilon

    mu = 1 / 3.593e15
    assert float(gaussian_delta(mu, 1e-15)) == pytest.approx(float(_mp_delta(mu, 1e-15, 80)), rel=1e-9)
    eps = gaussian_epsilon(mu, 1e-300)
    assert _mp_delta(mu, eps, 700) <= 1e-300 < _mp_delta(mu, eps * (1 - 1e-9), 700)


def test_analytic_calibration_at_tiny_targets_meets_them():
    # (1e-300, 1e-300) was calibrated to noise 3.6e15, whose true delta at 1e-300 is 1e-16; (1e-10, 1e-200) to
    # a noise whose exact epsilon was 1.002e-10
    from accounting.calibration import analytic_gaussian_noise_multiplier

    for epsilon, delta in ((1e-300, 1e-300), (1e-10, 1e-200)):
        z = analytic_gaussian_noise_multiplier(epsilon, delta)
        assert _mp_delta(1 / z, epsilon, 700) <= delta < _mp_delta(1 / (z * (1 - 1e-9)), epsilon, 700)
