"""What ``dpaudit flower`` says about the deployment, on an app a user wrote (``tests/flower_apps/fraction_dp``: NumPy
linear regression, FedAvg training a fraction of the connected nodes in a subclass of Flower's server-side
fixed-clipping wrapper, z = 1.2, C = 1, ``num-sampled-clients`` the user's own figure; 10 SuperNodes).

- Canary SuperNodes join the connected population: a strategy sampling a fraction of it samples more nodes, one
  sampling a fixed count samples at a lower rate. Such a canary run is another system, so it is refused after the
  run (exit 2, one line naming the sampling and what to set), where it once passed bugs that the run without
  canaries catches; a canary run that keeps the rate, its wrapper told its sample, is accounted as the deployment
  (the real nodes, their sample).
- Nodes still connecting when the ServerApp starts (Flower's simulation registers them after starting it): the
  audit runs the ServerApp once every node is connected.
- The printed transcript check (rounds, checks, the noise test's power), the verdict when no claim was tested, the
  canaries' reach against the claim, the strategy named once, estimates said to be estimates, and FedAvg's
  weighting downgraded where the transcript shows equal weights.

Each run is on the in-process grid (``tests/flower/inprocess_grid.py``; deterministic: the app seeds Python's and
NumPy's generators). About 2-4 s a run on 2 cores.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from reports.cli import main  # noqa: E402
from tests.flower.inprocess_grid import flower_runtime_in_process  # noqa: E402

APP = Path(__file__).resolve().parents[1] / "flower_apps" / "fraction_dp"


def audit(tmp_path, monkeypatch, *argv, connecting=None) -> tuple[int, dict]:
    """``dpaudit flower APP --num-supernodes 10 ARGV`` on the in-process grid, run afresh (not the probe's saved run
    of the same settings: the runtime differs between tests)."""
    import attacks.probes.flower as probe

    monkeypatch.setattr(probe, "_RUNS", {})
    flower_runtime_in_process(monkeypatch, connecting=connecting)
    out = tmp_path / f"audit-{len(list(tmp_path.iterdir()))}" / "report.json"
    code = main(["flower", str(APP), "--num-supernodes", "10", *argv, "--out", str(out.parent)])
    return code, json.loads(out.read_text()) if out.exists() else {}


def refusal(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def codes(result: dict, severity: str = "critical") -> set[str]:
    return {f["code"] for f in result["findings"] if f["severity"] == severity}


def test_canaries_that_change_the_sampling_are_refused_after_the_run(tmp_path, monkeypatch, capsys):
    """FedAvg(fraction_train=0.5) samples 5 of the 10 real nodes, 10 of 20 with 10 canaries, while the wrapper
    scales its noise for num_sampled_clients=5: twice the noise per client of the deployment. Half the noise,
    caught without canaries, passed with them (only a LOW sample-size-above-configured): now refused. A fixed
    count (2 a round) would be sampled at rate 2/20 instead of 2/10: refused too."""
    code, plain = audit(tmp_path, monkeypatch, "--run-config", "noise-scale=0.5")
    assert code == 1 and "noise-below-accounted" in codes(plain)
    capsys.readouterr()
    for config in ("noise-scale=0.5", "noise-scale=1.0"):
        code, _ = audit(tmp_path, monkeypatch, "--canaries", "10", "--run-config", config)
        message = refusal(capsys)
        assert code == 2 and "canaries: Flower ran the app, but the 10 canary SuperNodes change" in message
        assert "num_sampled_clients=5" in message and "set num_sampled_clients = 10 for the canary run" in message
    code, _ = audit(tmp_path, monkeypatch, "--canaries", "10", "--run-config",
                    "fraction-train=1e-9 num-sampled-clients=2")
    message = refusal(capsys)
    assert code == 2 and "trains 2 of the 20 nodes with them but 2 of the 10 real nodes" in message
    assert "rate 0.1 instead of 0.2" in message and "min_train_nodes = 20" in message


def test_canaries_that_keep_the_rate_are_accounted_as_the_deployment(tmp_path, monkeypatch):
    """Told the canary run's sample (10 of 20: the deployment's 5 of 10 at the same rate), the canary run's noise
    per client is the deployment's: half the noise is a VIOLATION with canaries too, and the accounting is the
    deployment's (population 10, 5 a round), the same figures as the run without canaries."""
    code, plain = audit(tmp_path, monkeypatch)
    assert code == 0 and not codes(plain)
    code, correct = audit(tmp_path, monkeypatch, "--canaries", "10", "--run-config", "num-sampled-clients=10")
    assert code == 0 and not codes(correct), correct["findings"]
    details = correct["details"]
    assert (details["population"], details["config"]["nodes"], details["config"]["sampled"]) == (10, 10, 5)
    assert details["canary_run"] == {"supernodes": 20, "canaries": 10, "sampled": [10]}
    assert details["rows"] == plain["details"]["rows"]
    code, halved = audit(tmp_path, monkeypatch, "--canaries", "10", "--run-config",
                         "num-sampled-clients=10 noise-scale=0.5")
    assert code == 1 and "noise-below-accounted" in codes(halved)


def test_the_serverapp_runs_once_every_node_has_connected(tmp_path, monkeypatch):
    """Flower's simulation starts the ServerApp before it registers the SuperNodes; with 3 of 10 connected at first,
    the first round sampled from fewer nodes and the fixed sample size looked broken (CRITICAL sampling-scheme).
    The audit now starts the ServerApp once all 10 are connected: every round samples 5 of 10."""
    code, result = audit(tmp_path, monkeypatch, connecting=3)
    assert code == 0 and not codes(result), result["findings"]
    payloads = [m["payload"] for m in result["details"]["transcript"]["messages"]]
    assert [(p["population"], len(p["sampled"])) for p in payloads] == [(10, 5)] * 3


def test_a_sample_size_changing_with_the_connected_nodes_names_the_cause():
    """Where rounds sampled from different numbers of connected nodes (nodes still connecting), the sampling-scheme
    and population findings say so."""
    from attacks.flower_checks.assumptions import Assumptions
    from attacks.flower_checks.sampler_check import check_scheme

    records = [(1, {"sampled": list(range(18)), "population": 37}), (2, {"sampled": list(range(25)), "population": 50})]
    found = {f.code: f for f in check_scheme(records, Assumptions("fixed-size", 50, 25, 2, 1.0, 1.0), 1e-3)}
    assert found["sampling-scheme"].severity == "critical" and found["population"].severity == "high"
    for finding in found.values():
        assert "rounds [1] sampled from fewer connected nodes ([37, 50] by round)" in finding.message
        assert "nodes were still connecting" in finding.message and "min_available_nodes" in finding.message


def test_the_summary_prints_the_transcript_check_and_its_power(tmp_path, monkeypatch, capsys):
    """A PASS prints what the transcript check looked at and what its noise test can see: with a 9-parameter model
    (3 rounds, alpha 1e-3 split over them) only noise below 0.245 of the accounted is refuted with probability 0.9
    (chi-square closed form, recomputed here), so noise x 0.8 passes unseen. With no claim the verdict says so."""
    import math

    from scipy import stats

    code, result = audit(tmp_path, monkeypatch, "--run-config", "features=8")
    out = capsys.readouterr().out
    assert code == 0
    ratio = math.sqrt(stats.chi2.ppf(1e-3 / 3, 9) / stats.chi2.ppf(0.9, 9))
    power = result["details"]["transcript_check"]["power"]
    assert power["coordinates"] == 9 and power["refuted_ratio"] == pytest.approx(ratio, rel=1e-12)
    assert "  transcript check: 3 rounds, 8 kinds of check (release count, sample sizes" in out
    assert f"  power: each round's noise (9 coordinates) would be refuted below {ratio:.3f} of the accounted" in out
    verdict = out.splitlines()[0]
    assert verdict.startswith(f"Flower app audit of {APP}: verdict PASS, no claim tested")
    accounted = result["details"]["accounted_epsilon"]
    assert f"epsilon {accounted:.4g} at delta 1e-05" in verdict and result["claim_tested"] is False
    main(["flower", str(APP), "--num-supernodes", "10", "--run-config", "features=8", "--claim-epsilon", "20"])
    assert capsys.readouterr().out.splitlines()[0] == f"Flower app audit of {APP}: verdict PASS"


def test_a_claim_above_the_canaries_ceiling_is_untestable_saying_how_many_could(tmp_path, monkeypatch, capsys):
    """10 canaries can show at most epsilon 0.36: against a claim of 3 (below what the sampler provably spends: a
    VIOLATION of the configuration check) they are INCONCLUSIVE, and the finding names the least count whose ceiling
    exceeds 3 (checked against the ceiling itself); against the accounted 15.3 no count can (the one-run bound's
    ceiling peaks near 5 at delta 1e-5)."""
    from attacks.estimators.one_run import one_run_ceiling

    code, result = audit(tmp_path, monkeypatch, "--canaries", "10", "--run-config", "num-sampled-clients=10",
                         "--claim-epsilon", "3")
    out = capsys.readouterr().out
    assert code == 1 and result["canary_status"] == "INCONCLUSIVE" and codes(result) == {"understated-user-claim"}
    [finding] = [f for f in result["findings"] if f["code"] == "canaries-untestable"]
    least = finding["values"]["least_canaries"]
    assert one_run_ceiling(least - 1, 1e-5, 0.975) <= 3 < one_run_ceiling(least, 1e-5, 0.975)
    assert f"at least {least} canaries could" in finding["message"]
    assert "canaries against epsilon 3: INCONCLUSIVE (the claim is above their ceiling" in out
    code, result = audit(tmp_path, monkeypatch, "--canaries", "10", "--run-config", "num-sampled-clients=10")
    [finding] = [f for f in result["findings"] if f["code"] == "canaries-untestable"]
    assert finding["values"]["least_canaries"] is None and "no number of canaries can" in finding["message"]


def test_the_strategy_is_named_once_and_the_audits_wrappers_by_it(tmp_path, monkeypatch, capsys):
    """Flower logs the outermost strategy it starts: the audit's recorder is named after the app's (no
    "CanaryHost" without canaries); the summary names the app's wrapper subclass once, beside Flower's class, and
    the strategy it wraps."""
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger = logging.getLogger("flwr")
    logger.addHandler(handler)
    try:
        code, result = audit(tmp_path, monkeypatch)
    finally:
        logger.removeHandler(handler)
    assert code == 0
    assert "Starting MyDP (dpaudit recorder) strategy:" in seen and not [m for m in seen if "CanaryHost" in m]
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  ran ")]
    assert line == ["  ran MyDP (a DifferentialPrivacyServerSideFixedClipping) via Strategy.start (Message API): "
                    "3 rounds, around FedAvg (what is noised is its aggregate)"]


def test_weighted_by_examples_is_info_where_every_weight_was_equal(tmp_path, monkeypatch):
    """FedAvg weighs by the reported counts; every client here reports 64 examples, which the transcript's weights
    show: INFO, not MEDIUM. Weights that differed keep the MEDIUM configuration finding."""
    from attacks.flower_checks.findings import FlowerFinding
    from attacks.flower_checks.run_checks import weighting_seen

    code, result = audit(tmp_path, monkeypatch)
    [weighting] = [f for f in result["findings"] if f["code"] == "weighted-by-examples"]
    assert code == 0 and weighting["severity"] == "info" and weighting["values"]["equal_in_run"]
    medium = [FlowerFinding("weighted-by-examples", "medium", "FedAvg weights by reported example counts", {})]
    unequal = [(1, {"weights": [0.5, 0.5]}), (2, {"weights": [0.25, 0.75]})]
    assert weighting_seen(medium, unequal) == medium
    assert weighting_seen(medium, unequal[:1])[0].severity == "info"


def test_a_canary_estimate_above_the_upper_bound_is_said_to_be_an_estimate():
    """Estimates carry their standard errors; one above the proven upper bound is said to be the estimate's error,
    not a leak."""
    from attacks.probes.flower import canary_estimate_finding

    rows = {"runs": {"epsilon": 7.08}, "worst-pair": {"epsilon": 6.57}}
    estimate = {"epsilon": 10.69, "mu": 2.11, "mu_stderr": 0.33}
    canaries = {"final_model": {"estimate": estimate}, "all_iterates": {"estimate": estimate},
                "measured_shift": {"participations": 80, "estimate": {"epsilon": 9.0}, "shift": 0.6, "stderr": 0.1,
                                   "configured_shift": 0.5}}
    message = canary_estimate_finding(canaries, rows)["message"]
    assert "mu 2.11 +- 0.33" in message and "shift 0.6 +- 0.1 per round" in message
    assert "an estimate above the proven upper bound 7.08 is the estimate's error" in message
    below = {**canaries, "final_model": {"estimate": {"epsilon": 5.0, "mu": 1.0, "mu_stderr": 0.3}},
             "all_iterates": {"estimate": {"epsilon": 5.0, "mu": 1.0, "mu_stderr": 0.3}},
             "measured_shift": {"participations": 0}}
    assert "not a leak" not in canary_estimate_finding(below, rows)["message"]
