"""Configuration check of Flower DP settings: epsilons against dp-accounting called directly here.

These tests need no flwr (the strategy reader is duck-typed); the ones reading real flwr objects are in
test_flwr_read.py and skip without the extra.
"""

import dp_accounting as dpa
import pytest
from dp_accounting import pld, rdp

from accounting.errors import ConfigurationError
from attacks.flower_checks.check import check_config
from dpfed.flower.config import FlowerDpConfig, accounted_rows

DELTA = 1e-5
REL = dpa.NeighboringRelation


def _rdp(event, relation):
    accountant = rdp.RdpAccountant(neighboring_relation=relation)
    accountant.compose(event)
    return accountant.get_epsilon(DELTA)


def _pld(event):
    accountant = pld.PLDAccountant()
    accountant.compose(event)
    return accountant.get_epsilon(DELTA)


@pytest.fixture(scope="module")
def issue_rows():
    """The issue's setting: 100 clients, 10 per round, z = 1, 100 rounds."""
    config = FlowerDpConfig("server-fixed", rounds=100, nodes=100, sampled=10, noise_multiplier=1.0)
    return accounted_rows(config, DELTA)


def test_runs_row_is_fixed_size_replace_one_with_half_z(issue_rows):
    event = dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(100, 10, dpa.GaussianDpEvent(0.5)), 100)
    assert issue_rows["runs"]["epsilon"] == pytest.approx(_rdp(event, REL.REPLACE_ONE), rel=1e-6)
    assert issue_rows["runs"]["epsilon"] == pytest.approx(83.9, abs=0.05)  # the issue's figure


def test_claim_rows_match_dp_accounting(issue_rows):
    no_amp = _pld(dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(1.0), 100))
    poisson = _pld(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.1, dpa.GaussianDpEvent(1.0)), 100))
    unchanged = _rdp(dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(100, 10, dpa.GaussianDpEvent(1.0)),
                                             100), REL.REPLACE_ONE)
    assert issue_rows["no-amplification"]["epsilon"] == pytest.approx(no_amp, rel=1e-3)
    assert issue_rows["poisson"]["epsilon"] == pytest.approx(poisson, rel=1e-3)
    assert issue_rows["z-unchanged"]["epsilon"] == pytest.approx(unchanged, rel=1e-6)
    for row, figure in (("no-amplification", 91.8), ("poisson", 7.05), ("z-unchanged", 14.05)):
        assert issue_rows[row]["epsilon"] == pytest.approx(figure, abs=0.06)


def test_documented_configuration_figures_reproduce(issue_rows):
    """BENCHMARKS.md's configuration table (Flower section) and docs/explanation/flower.md's
    "at least 31.3, and at most 83.9":
    each documented epsilon is the fresh row's, to its printed decimals (half a unit of the last digit)."""
    from tests.flower.documented import find, printed, section, table_rows

    names = {"runs (corrected)": "runs", "worst-pair (lower bound)": "worst-pair", "no-amplification":
             "no-amplification", "poisson": "poisson", "z-unchanged": "z-unchanged"}
    rows = [row for row in table_rows(section("BENCHMARKS.md", "## Flower"), "") if row[0] in names]
    assert [row[0] for row in rows] == list(names)  # the table, once, every row
    for row in rows:
        assert printed(row[3].split()[0], issue_rows[names[row[0]]]["epsilon"]), row
    readme = find(r"the sampler provably spends at least ([\d.]+), and at most ([\d.]+) \(RDP\)",
                  section("docs/explanation/flower.md", "# How a Flower run is audited"))
    assert printed(readme[1], issue_rows["worst-pair"]["epsilon"]) and printed(readme[2], issue_rows["runs"]["epsilon"])


def test_findings_flag_understated_claims_with_corrected_epsilon():
    config = FlowerDpConfig("server-fixed", rounds=100, nodes=100, sampled=10, noise_multiplier=1.0)
    out = check_config(config, DELTA, configured_m=10, claimed_epsilon=8.0)
    codes = {f.code: f for f in out["findings"]}
    for code in ("understated-poisson", "understated-z-unchanged", "understated-user-claim"):
        assert codes[code].severity == "critical"
        assert codes[code].values["corrected_epsilon"] == pytest.approx(out["rows"]["runs"]["epsilon"])
    assert codes["loose-no-amplification"].severity == "low"  # 91.8 > 83.9: loose, not understated
    assert codes["weighted-by-examples"].severity == "medium"
    assert "sample-size-mismatch" not in codes


def test_a_claim_between_the_realised_pair_and_the_upper_bound_is_unproven():
    """The issue's setting: the sampler realises a replace-one pair of epsilon 31.3 (accounting.replace_one_pair),
    our RDP bound is 83.9; a claim of 50 can be neither refuted nor confirmed."""
    config = FlowerDpConfig("server-fixed", rounds=100, nodes=100, sampled=10, noise_multiplier=1.0, weighting="equal")
    out = check_config(config, DELTA, configured_m=10, claimed_epsilon=50.0, claims=())
    # The pair is dp-accounting's Poisson-subsampled Gaussian (add/remove) at std z/2 (accounting.replace_one_pair;
    # its reduction is checked by numerical integration in tests/accounting/test_replace_one_pair.py). Its
    # pessimistic PLD, called here, is an upper bound; the row (losses rounded down) sits at most 0.1 below it.
    # (Was the pasted 31.3 +- 0.1.)
    pair = pld.PLDAccountant(value_discretization_interval=1e-3)
    pair.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.1, dpa.GaussianDpEvent(0.5)), 100))
    upper = pair.get_epsilon(DELTA)
    assert upper - 0.1 <= out["rows"]["worst-pair"]["epsilon"] <= upper
    assert [(f.code, f.severity) for f in out["findings"]] == [("unproven-user-claim", "medium")]
    below = check_config(config, DELTA, configured_m=10, claimed_epsilon=30.0, claims=())["findings"]
    assert [(f.code, f.severity) for f in below] == [("understated-user-claim", "critical")]


def test_sample_size_mismatch_and_equal_weights():
    config = FlowerDpConfig("server-fixed", rounds=10, nodes=50, sampled=5, noise_multiplier=2.0, weighting="equal")
    codes = {f.code: f.severity for f in check_config(config, DELTA, configured_m=10)["findings"]}
    assert codes["sample-size-mismatch"] == "critical"  # noise for 10, only 5 sampled
    assert "weighted-by-examples" not in codes
    only_flower = check_config(config, DELTA, configured_m=5, claims=("no-amplification",))["findings"]
    assert [f.code for f in only_flower] == ["loose-no-amplification"]


@pytest.mark.parametrize("epsilon, flagged, code", [(0.5, False, None), (4.0, False, "classic-out-of-range"),
                                                   (10.0, True, "classic-calibration")])
def test_local_dp_mod_classic_calibration(epsilon, flagged, code):
    from scipy import stats

    config = FlowerDpConfig("local", rounds=5, nodes=20, sampled=5, local_epsilon=epsilon, local_delta=DELTA)
    findings = check_config(config, DELTA)["findings"]
    # independent check: exact Gaussian delta (Balle and Wang) at the classic multiplier
    z = (2 * __import__("math").log(1.25 / DELTA)) ** 0.5 / epsilon
    mu = 1 / z
    true_delta = stats.norm.cdf(mu / 2 - epsilon / mu) - __import__("math").exp(epsilon) * stats.norm.cdf(
        -mu / 2 - epsilon / mu)
    assert (true_delta > DELTA) == flagged
    assert [f.code for f in findings] == ([code] if code else [])


@pytest.mark.parametrize("kwargs", [dict(kind="bogus"), dict(sampled=200), dict(weighting="median"),
                                    dict(noise_multiplier=0.0)])
def test_bad_configs_raise_configuration_error(kwargs):
    base = dict(kind="server-fixed", rounds=10, nodes=100, sampled=10, noise_multiplier=1.0)
    with pytest.raises(ConfigurationError):
        FlowerDpConfig(**{**base, **kwargs})
