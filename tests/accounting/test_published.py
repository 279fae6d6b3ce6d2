"""Published and reference numbers (sources in each test)."""

import numpy as np
import pytest

from accounting import Composition, SubsampledGaussian, account_all
from accounting.moments import MomentsAccountant
from accounting.rdp import RdpAccountant

LANDMINE_DELTA = 29**-1.1


def landmine(q, z, **options):
    return Composition.of(SubsampledGaussian(q, z, **options), 60)


# DP-FTS-DE (Dai et al. 2021), landmine privacy losses, authors' analyze.ipynb; see notes 4.4.
@pytest.mark.parametrize(
    "q, z, published",
    [
        (0.35, 1.0, 15.17),
        (0.35, 1.6, 7.12),
        (0.35, 2.0, 5.14),
        (0.35, 3.0, 3.05),
        (0.35, 4.0, 2.16),
        (0.10, 1.0, 3.75),
        (0.15, 1.0, 5.98),
        (0.20, 1.0, 7.69),
        (0.25, 1.0, 9.82),
    ],
)
def test_moments_reproduces_published_landmine_values(q, z, published):
    assert round(MomentsAccountant().epsilon(landmine(q, z), LANDMINE_DELTA), 2) == published


def opacus_rdp_epsilon(q, z, steps, delta, orders) -> float:
    """opacus's RDP epsilon of the Poisson subsampled Gaussian, minimised over ``orders``."""
    import warnings

    from opacus.accountants.analysis.rdp import compute_rdp, get_privacy_spent

    orders = [float(a) for a in orders]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rdp = compute_rdp(q=q, noise_multiplier=z, steps=steps, orders=orders)
        return float(get_privacy_spent(orders=orders, rdp=rdp, delta=delta)[0])


def test_rdp_fractional_and_integer_orders_at_reference_point():
    accountant = RdpAccountant()
    eps = accountant.epsilon(landmine(0.35, 1.0), LANDMINE_DELTA)
    best = accountant.last_details["best_order"]
    # Reference: opacus's RDP analysis (same RDP-to-DP conversion) minimised over fractional orders 1.50 ..
    # 1.79 in steps of 0.01; it gives 12.5314 at order 1.65. (Was 12.56 +- 0.05, a number with no source.)
    assert opacus_rdp_epsilon(0.35, 1.0, 60, LANDMINE_DELTA, np.arange(1.5, 1.8, 0.01)) == pytest.approx(eps, abs=1e-3)
    assert 1.4 < best < 2.0 and best != round(best)
    integer_only = RdpAccountant(orders=np.arange(2, 257), refine=False).epsilon(landmine(0.35, 1.0), LANDMINE_DELTA)
    assert round(integer_only, 2) == 13.78


def test_pld_and_prv_at_reference_point():
    results = {r.name: r for r in account_all(landmine(0.35, 1.0), LANDMINE_DELTA, ["pld", "prv"])}
    assert round(results["pld"].epsilon, 2) == 10.38
    assert abs(results["prv"].epsilon - 10.38) < 0.03


def test_replace_one_and_fixed_size_reference_values():
    # notes 4.5: Poisson replace-one PLD 21.39.
    rep = account_all(landmine(0.35, 1.0, neighbouring="replace-one"), LANDMINE_DELTA, ["pld", "rdp"])
    assert round(rep[0].epsilon, 2) == 21.39
    assert rep[1].epsilon >= rep[0].epsilon - 0.02
    wor = account_all(
        landmine(0.35, 1.0, neighbouring="replace-one", sampling="fixed-size", population=29),
        LANDMINE_DELTA,
        ["dpa-rdp", "rdp", "pld"],
    )
    # notes 4.6 (ii): dp-accounting's multiplier is relative to the L2 sensitivity 2 x clip, so z / 2.
    assert round(wor[0].epsilon, 1) == 160.6
    assert wor[1].status == "unsupported" and wor[2].status == "unsupported" and wor[1].reason


def test_abadi_reference_setting():
    # notes section 3: q=0.01, sigma=4, T=1e4, delta=1e-5: RDP 1.035, PLD/PRV 0.947.
    comp = Composition.of(SubsampledGaussian(0.01, 4.0), 10_000)
    r = {x.name: x.epsilon for x in account_all(comp, 1e-5, ["rdp", "pld", "prv"])}
    assert r["rdp"] <= 1.035 + 1e-3 and r["rdp"] > 0.9
    assert abs(r["pld"] - 0.947) < 0.01 and abs(r["prv"] - 0.947) < 0.015
