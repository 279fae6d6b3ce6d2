"""The accountant cost guard: one Gaussian for un-subsampled Gaussian compositions is the same bound as
dp-accounting's k-fold PLD (checked against that slow path on small cases and the closed form), a PLD
predicted to be slow is skipped with its reason unless insisted on, a long accountant says so on
stderr, opacus's PRV is stopped at its time limit, and `account` with every accountant on the issue's
fedzero configuration answers with the collapsed PLD (no test here times anything)."""

from __future__ import annotations

import math
import time

import pytest
from scipy import optimize, stats

from accounting import pld as pld_module
from accounting import prv as prv_module
from accounting.base import run_accountant
from accounting.cost import announce_if_slow, estimate_seconds
from accounting.mechanisms import Composition, Gaussian, SubsampledGaussian
from accounting.pld import PldAccountant, discretisation_interval
from accounting.registry import account_all
from reports.cli import main


def closed_form_epsilon(mu: float, delta: float) -> float:
    """Balle and Wang's tight Gaussian profile, solved with scipy (independent of accounting.exact)."""

    def excess(eps):
        first = math.exp(stats.norm.logcdf(-eps / mu + mu / 2))
        second = math.exp(eps + stats.norm.logcdf(-eps / mu - mu / 2))
        return first - second - delta

    return optimize.brentq(excess, 0.0, mu * mu / 2 + 10 * mu + 10, xtol=1e-12)


CASES = [
    (Composition.of(SubsampledGaussian(1.0, 1.0, 1.0), 10), math.sqrt(10)),
    (Composition.of(SubsampledGaussian(1.0, 2.0, 1.0), 100), 5.0),
    (Composition.of(Gaussian(1.5), 4) + Composition.of(Gaussian(3.0), 9), math.sqrt(4 / 1.5**2 + 9 / 9.0)),
    (Composition.of(SubsampledGaussian(1.0, 2.0, 1.0, neighbouring="replace-one"), 25), 2.0 * 5 / 2.0),
]


@pytest.mark.parametrize("composition, mu", CASES)
def test_one_gaussian_is_the_same_bound_as_the_k_fold_pld(composition, mu):
    delta = 1e-5
    fast = PldAccountant()
    eps_fast = fast.epsilon(composition, delta)
    assert "composition_collapsed" in fast.last_details
    # the previous path: dp-accounting's PLD of the k-fold composition, at its own interval
    slow = pld_module._accountant(composition, discretisation_interval(composition)).get_epsilon(delta)
    exact = closed_form_epsilon(mu, delta)
    assert eps_fast >= exact - 1e-9 and slow >= exact - 1e-9  # both upper bounds
    assert eps_fast == pytest.approx(slow, rel=1e-6, abs=1e-6)
    assert eps_fast == pytest.approx(exact, rel=1e-6, abs=1e-6)


def test_subsampled_and_laplace_compositions_keep_the_k_fold_path():
    fast = PldAccountant()
    fast.epsilon(Composition.of(SubsampledGaussian(0.35, 1.0, 1.0), 3), 1e-5)
    assert "composition_collapsed" not in fast.last_details


def test_the_issue_configuration_composes_one_release_and_is_an_upper_bound():
    # 10^4 un-subsampled releases of noise 1: ~257 s in the k-fold PLD before (BENCHMARKS.md); now one release
    # is composed (what makes it instant, checked by what ran rather than by a clock)
    composition = Composition.of(SubsampledGaussian(1.0, 1.0, 1.0), 10_000)
    result = run_accountant(PldAccountant(), composition, delta=1e-5)
    assert result.details["releases_composed"] == 1 and "composition_collapsed" in result.details
    exact = closed_form_epsilon(100.0, 1e-5)
    assert result.ok and exact <= result.epsilon <= exact * 1.001


def test_a_slow_pld_is_skipped_with_its_reason_unless_insisted(capsys):
    composition = Composition.of(SubsampledGaussian(0.9, 1.0, 1.0), 3000)
    seconds, _ = estimate_seconds("pld", composition)
    assert seconds > 10
    (row,) = account_all(composition, 1e-5, ["pld"])
    assert row.status == "unsupported" and "would take about" in row.reason and "--accountants pld" in row.reason
    cheap = Composition.of(SubsampledGaussian(0.35, 1.0, 1.0), 5)
    messages = []
    (row,) = account_all(cheap, 1e-5, ["pld"], insist=["pld"], budget=0.0, progress=messages.append)
    assert row.ok and messages and "running because it was asked for" in messages[0]


def test_a_sparse_pld_counts_the_integer_power_it_computes_first():
    # z = 404.5, q = 0.01: one release's PMF has 7 points, so dp-accounting computes 7**T exactly before it
    # self-composes (2.8e8 bits at T = 1e8, about 10 minutes holding the interpreter); the grid-only estimate
    # said 36 s. The power's cost is superlinear in T: ten times the releases, over 30 times the seconds.
    import dp_accounting.pld.pld_pmf as pld_pmf

    small, large = (Composition.of(SubsampledGaussian(0.01, 404.5), t) for t in (10**7, 10**8))
    assert pld_pmf.SparsePLDPmf.self_compose  # the sparse path this estimate is about still exists
    (seconds_small, _), (seconds_large, what) = estimate_seconds("pld", small), estimate_seconds("pld", large)
    assert seconds_large > 30 * (seconds_small - 1.0) and "integer power" in what
    (row,) = account_all(large, 1e-5, ["pld"])
    assert row.status == "unsupported" and "integer power" in row.reason


def test_a_long_accountant_says_so_while_it_runs():
    messages = []
    with announce_if_slow("pld", "a test", messages.append, after=0.05, every=0.05):
        time.sleep(0.3)
    assert messages and all("still running" in m for m in messages)


def test_prv_stops_at_its_time_limit_and_recovers():
    composition = Composition.of(SubsampledGaussian(0.35, 1.0, 1.0), 60)
    engine = prv_module.PrvAccountant(time_limit=0.001)
    result = run_accountant(engine, composition, delta=1e-5)
    assert result.status == "unsupported" and "--accountants prv" in result.reason
    assert run_accountant(prv_module.PrvAccountant(), composition, delta=1e-5).ok  # a fresh worker


def test_account_with_every_accountant_on_the_fedzero_configuration(capsys):
    code = main(["account", "--rate", "1", "--noise", "1", "--steps", "10000", "--delta", "1e-5"])
    out = capsys.readouterr().out
    # pld answers at once (one Gaussian, checked above); prv has at most its 10 s limit; the rest are closed forms
    assert code == 0
    assert "pld" in out and "5426" in out
