"""Noise multipliers cross into peer libraries in their units: every accountant agrees with the closed
form and with the peers called directly, under replace-one as under add/remove."""

import math
import pathlib
import re

import pytest
from scipy import optimize, stats

from accounting import Composition, Gaussian, SubsampledGaussian, account_all
from accounting.peers import PeerScale, peer_noise_multiplier

ROOT = pathlib.Path(__file__).resolve().parents[2]
ALL = ["exact", "rdp", "pld", "prv", "dpa-rdp", "moments"]


def closed_form_epsilon(mu: float, delta: float) -> float:
    """Tight epsilon of mu-GDP (Balle and Wang 2018), from scipy only."""

    def excess(eps):
        tail = math.exp(eps + stats.norm.logcdf(-eps / mu - mu / 2))
        return stats.norm.cdf(-eps / mu + mu / 2) - tail - delta

    high = mu * mu / 2 + 10 * mu + 10  # delta(high) < Phi(-10)
    return optimize.brentq(excess, 0.0, high, xtol=1e-12, rtol=1e-14) if excess(0.0) > 0 else 0.0


def closed_form_rdp_epsilon(mu: float, delta: float) -> float:
    """Best improved RDP conversion of mu-GDP (RDP(a) = a mu^2 / 2), optimised over real orders."""

    def eps(a):
        return a * mu**2 / 2 + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)

    return optimize.minimize_scalar(eps, bounds=(1.0001, 1e5), method="bounded", options={"xatol": 1e-9}).fun


def dpa_rdp_direct(event, relation, delta):
    import dp_accounting
    from dp_accounting import rdp

    accountant = rdp.RdpAccountant(neighboring_relation=getattr(dp_accounting.NeighboringRelation, relation))
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def test_fixed_size_replace_one_matches_dp_accounting_with_half_multiplier():
    import dp_accounting

    delta = 29**-1.1
    mechanism = SubsampledGaussian(0.35, 1.0, sampling="fixed-size", population=29, neighbouring="replace-one")
    ours = account_all(Composition.of(mechanism, 60), delta, ["dpa-rdp"])[0].epsilon
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.SampledWithoutReplacementDpEvent(29, 10, dp_accounting.GaussianDpEvent(0.5)), 60
    )
    assert ours == pytest.approx(dpa_rdp_direct(event, "REPLACE_ONE", delta), rel=1e-12)
    assert ours == pytest.approx(160.6, abs=0.05)


@pytest.mark.parametrize("sampling", ["poisson", "fixed-size"])
@pytest.mark.parametrize("z, steps, delta", [(4.0, 10, 1e-5), (2.0, 1, 1e-3), (8.0, 100, 1e-8)])
def test_every_accountant_agrees_with_closed_form_under_replace_one(sampling, z, steps, delta):
    # Everybody takes part (rate 1): each release is a Gaussian whose means are 2 clips apart.
    mechanism = SubsampledGaussian(1.0, z, sampling=sampling, population=12, neighbouring="replace-one")
    results = {r.name: r for r in account_all(Composition.of(mechanism, steps), delta, ALL)}
    mu = 2.0 * math.sqrt(steps) / z
    tight, rdp_bound = closed_form_epsilon(mu, delta), closed_form_rdp_epsilon(mu, delta)
    assert results["exact"].epsilon == pytest.approx(tight, rel=1e-6)
    assert results["pld"].epsilon == pytest.approx(tight, abs=0.02)
    assert results["prv"].epsilon == pytest.approx(tight, abs=0.03)
    assert tight <= results["rdp"].epsilon <= rdp_bound * (1 + 1e-3)
    assert tight <= results["dpa-rdp"].epsilon <= rdp_bound * 1.02  # dp-accounting's order grid
    assert results["moments"].status == "unsupported"  # the paper's recipe is add/remove only


def test_mixed_composition_keeps_plain_gaussians_at_their_sensitivity():
    # Under replace-one, dp-accounting's PLD shifts by +-1 record norm; a plain Gaussian whose declared
    # sensitivity is the distance itself must enter with twice its multiplier.
    parts = ((Gaussian(2.0), 3), (SubsampledGaussian(1.0, 2.0, neighbouring="replace-one"), 2))
    results = {r.name: r.epsilon for r in account_all(Composition(parts), 1e-6, ["exact", "pld", "prv"])}
    tight = closed_form_epsilon(math.sqrt(3 * 0.5**2 + 2 * 1.0**2), 1e-6)
    assert results["exact"] == pytest.approx(tight, rel=1e-6)
    assert results["pld"] == pytest.approx(tight, abs=0.02)
    assert results["prv"] == pytest.approx(tight, abs=0.03)


@pytest.mark.parametrize(
    "relation, sensitivity_scale, record_scale",
    [
        ("add-remove", 2.0, 2.0),
        ("replace-one", 1.0, 2.0),
    ],
)
def test_peer_multiplier_of_a_subsampled_gaussian(relation, sensitivity_scale, record_scale):
    mechanism = SubsampledGaussian(0.1, 2.0, clip=3.0, neighbouring=relation)
    assert peer_noise_multiplier(mechanism, relation, PeerScale.SENSITIVITY) == sensitivity_scale
    assert peer_noise_multiplier(mechanism, relation, PeerScale.RECORD_NORM) == record_scale


def test_no_multiplier_reaches_a_peer_outside_the_peers_module():
    """Structural guard: package code builds dp-accounting noise events and opacus histories only
    through accounting/peers.py, so the replace-one factor cannot be forgotten again."""
    pattern = re.compile(r"(Gaussian|Laplace)DpEvent\(|\.history\s*=\s*\[|noise_multiplier\s*=\s*[^=]")
    offenders = []
    for package in ("accounting", "dpfed", "attacks", "reports"):
        for path in (ROOT / package).rglob("*.py"):
            if path.name == "peers.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line) and ("dp_accounting" in line or "opacus" in line or "DpEvent" in line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, offenders


@pytest.mark.parametrize("relation", ["add-remove", "replace-one"])
def test_pld_of_repeated_subsampled_releases_is_dp_accountings_own(relation):
    """``accounting.pld`` builds one release's PLD once and self-composes it per count (epsilon over rounds asks
    for several counts); dp-accounting's PLDAccountant, composing the same event itself, gives the same numbers."""
    import dp_accounting

    from accounting import pld as ours
    from accounting.peers import composition_relation, dp_event, dpa_relation

    mechanism = SubsampledGaussian(0.5, 2.64, neighbouring=relation)
    for count in (7, 3):  # the second count reuses the first one's single-release PLD
        composition = Composition.of(mechanism, count)
        own = composition_relation(composition)
        interval = ours.discretisation_interval(composition)
        direct = dp_accounting.pld.PLDAccountant(dpa_relation(own), interval)
        direct.compose(dp_event(composition, PeerScale.RECORD_NORM, own))
        for delta in (1e-5, 0.0246):  # to rounding: numpy's AVX-512 exp/log (tests/accounting/test_pld_gaussian.py)
            assert ours.PldAccountant().epsilon(composition, delta) == pytest.approx(direct.get_epsilon(delta),
                                                                                     rel=1e-9)
        assert ours.PldAccountant().delta(composition, 1.0) == pytest.approx(direct.get_delta(1.0), rel=1e-7)
