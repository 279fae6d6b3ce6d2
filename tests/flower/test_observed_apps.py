"""``dpaudit flower`` on apps it once refused: Flower's own DP examples (``tests/flower_examples``, copied with only
their data replaced) and apps of ours written outside the code in each style (``tests/flower_apps``): a main that
waits for its nodes, the legacy ``server_fn`` API, a legacy strategy under ``DefaultWorkflow`` with SecAgg+, opacus
in the clients with the accountant kept across rounds, and Flower's ``LocalDpMod``. Each correct app passes; each
planted bug (half the noise, the wrapper told the wrong sample size, a PrivacyEngine made afresh each round, a
LocalDpMod sensitivity below its clip) is a VIOLATION naming it.

The apps run on the in-process grid (``tests.flower.inprocess_grid``, standing in for Flower's simulation engine
so the suite stays fast; the same commands on the real engine are recorded in BENCHMARKS.md). The statistical
findings are lower-tail chi-square tests at 1e-3 split over their rounds (a correct app fails one with probability
below 1e-3; the seeds are fixed, so the outcome is the same every run).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from reports.cli import main  # noqa: E402
from tests.flower.inprocess_grid import flower_runtime_in_process  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES, APPS = ROOT / "flower_examples", ROOT / "flower_apps"


def audit(tmp_path, monkeypatch, app: Path, *argv) -> tuple[int, dict]:
    flower_runtime_in_process(monkeypatch)
    out = tmp_path / f"{app.name}-{len(list(tmp_path.iterdir()))}"
    code = main(["flower", str(app), *argv, "--out", str(out)])
    return code, json.loads((out / "report.json").read_text())


def critical(result: dict) -> set[str]:
    return {f["code"] for f in result["findings"] if f["severity"] == "critical"}


def test_fl_dp_sa_told_the_real_sample_passes_and_twice_it_is_a_violation(tmp_path, monkeypatch):
    """FedAvg(fraction_fit=0.2) samples 4 of 20 nodes; the wrapper told num-sampled-clients=4 adds z C / 4 on the
    mean of 4 (as accounted): PASS. Told 8, its noise is half of what is accounted: the sample-size finding, with
    the effective multiplier 0.2 * 4 / 8 = 0.1."""
    code, passed = audit(tmp_path, monkeypatch, EXAMPLES / "fl_dp_sa", "--num-supernodes", "20",
                         "--run-config", "num-sampled-clients=4")
    assert code == 0 and not critical(passed), passed["findings"]
    [start] = passed["starts"]
    assert start["api"] == "workflow" and start["secure_aggregation"] and start["workflow"] == "SecAggPlusWorkflow"
    assert start["recorded_rounds"] == [1, 2, 3]
    assert "secure-aggregation" in {f["code"] for f in passed["findings"]}
    code, halved = audit(tmp_path, monkeypatch, EXAMPLES / "fl_dp_sa", "--num-supernodes", "20",
                         "--run-config", "num-sampled-clients=8")
    assert code == 1 and "sample-size-mismatch" in critical(halved)
    [mismatch] = [f for f in halved["findings"] if f["code"] == "sample-size-mismatch"]
    assert mismatch["values"]["sampled"] == 4 and mismatch["values"]["configured"] == 8
    assert mismatch["values"]["effective_noise_multiplier"] == pytest.approx(0.1)
    assert "noise-below-accounted" in critical(halved)


def test_opacus_example_per_round_engine_is_a_violation_unless_the_claim_covers_the_composition(tmp_path,
                                                                                              monkeypatch):
    """Flower's opacus example makes a PrivacyEngine in every round: each client reports one round's epsilon.
    Composed over the 3 rounds (12 steps at rate 1/4), each client's epsilon is larger, computed here by
    dp-accounting's PLD directly (an independent reference)."""
    from dp_accounting import dp_event, pld

    code, result = audit(tmp_path, monkeypatch, EXAMPLES / "opacus")
    assert code == 1 and {"per-round-accounting", "understated-client-epsilon"} <= critical(result)
    rows = result["clients"]
    assert len(rows) == 2
    for row in rows.values():
        z = 1.0 if row["partition"] % 2 == 0 else 1.5
        assert row["noise_multipliers"] == [z] and row["steps"] == 12 and row["counted_steps"] == 4
        accountant = pld.PLDAccountant()
        accountant.compose(dp_event.PoissonSampledDpEvent(0.25, dp_event.GaussianDpEvent(z)), 12)
        assert row["composed_epsilon"] == pytest.approx(accountant.get_epsilon(1e-5), rel=0.01)
        assert row["reported_epsilon"] < row["composed_epsilon"]
    above = max(r["composed_epsilon"] for r in rows.values()) * 1.05
    code, covered = audit(tmp_path, monkeypatch, EXAMPLES / "opacus", "--claimed-epsilon", f"{above:.4f}")
    assert code == 0 and not critical(covered)
    assert {f["severity"] for f in covered["findings"] if f["code"] == "per-round-accounting"} == {"medium"}


@pytest.mark.parametrize("app, argv, api", [
    ("waiting_main", ["--num-supernodes", "4"], "message"),
    ("legacy_server_fn", ["--num-supernodes", "6"], "server"),
    ("secagg_workflow", ["--num-supernodes", "6"], "workflow"),
])
def test_central_dp_styles_pass_and_half_the_noise_is_a_violation(tmp_path, monkeypatch, app, argv, api):
    code, passed = audit(tmp_path, monkeypatch, APPS / app, *argv)
    assert code == 0 and not critical(passed), passed["findings"]
    assert [s["api"] for s in passed["starts"]] == [api] and passed["starts"][0]["recorded_rounds"] == [1, 2, 3]
    code, halved = audit(tmp_path, monkeypatch, APPS / app, *argv, "--run-config", "noise-scale=0.5")
    assert code == 1 and "noise-below-accounted" in critical(halved)


def test_opacus_with_the_accountant_kept_passes_and_half_the_noise_is_a_violation(tmp_path, monkeypatch):
    code, passed = audit(tmp_path, monkeypatch, APPS / "opacus_kept")
    assert code == 0 and not critical(passed), passed["findings"]
    for row in passed["clients"].values():
        assert row["counted_steps"] == row["steps"] == 12 and row["reported_epsilon"] >= row["composed_epsilon"]
    code, halved = audit(tmp_path, monkeypatch, APPS / "opacus_kept", "--run-config", "noise-scale=0.5")
    assert code == 1 and critical(halved) == {"client-noise-below-accounted"}
    ratios = {f["values"]["ratio"] for f in halved["findings"] if f["code"] == "client-noise-below-accounted"}
    assert all(0.4 < r < 0.6 for r in ratios)


def test_an_app_without_dp_is_refused_after_flower_ran_it_naming_what_ran(tmp_path, monkeypatch, capsys):
    flower_runtime_in_process(monkeypatch)
    assert main(["flower", str(APPS / "no_dp"), "--num-supernodes", "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Flower ran the app" in err and "no Flower central-DP wrapper" in err


@pytest.mark.parametrize("app", ["legacy_server_fn", "secagg_workflow"])
def test_canaries_take_part_in_legacy_apps_and_under_secure_aggregation(tmp_path, monkeypatch, app):
    """Legacy canaries run the app's own ClientApp and mods (under SecAgg+ they mask and unmask like the others) on
    a real partition's data, so they report a real client's example count: the weights stay equal (no
    unequal-weights finding of our own making), the server's recorder tells them apart by their marker, and the
    correct app still passes."""
    code, result = audit(tmp_path, monkeypatch, APPS / app, "--num-supernodes", "6", "--canaries", "20",
                         "--run-config", "clients-per-round=26")  # every node: the canaries keep the rate (6 of 6)
    assert code == 0 and not critical(result), result["findings"]
    assert result["details"]["population"] == 6 and result["details"]["canary_run"]["sampled"] == [26]
    canaries = result["details"]["canaries"]
    assert canaries["measured_shift"]["participations"] > 0 and len(canaries["signs"]) == 20
    for message in result["details"]["transcript"]["messages"]:
        weights = message["payload"]["weights"]
        assert weights == pytest.approx([1 / len(weights)] * len(weights))


def test_local_dp_mod_is_composed_over_each_clients_rounds(tmp_path, monkeypatch):
    """Flower's LocalDpMod (clip 1, sensitivity 2, epsilon 2 per release): each client's 3 releases composed pass the
    per-release claim; the same app with sensitivity 0.5 adds noise for a quarter of the replace-one sensitivity:
    critical, with each client's composed epsilon, checked against the exact Gaussian profile (closed form, scipy)."""
    import math
    import shutil

    from scipy.stats import norm

    code, passed = audit(tmp_path, monkeypatch, APPS / "local_dp", "--num-supernodes", "4")
    assert code == 0 and not critical(passed), passed["findings"]
    assert len(passed["local_dp"]) == 4 and {r["rounds"] for r in passed["local_dp"].values()} == {3}
    bug = tmp_path / "local_dp_bug"  # its package renamed: one process imports each app module once
    shutil.copytree(APPS / "local_dp", bug, ignore=shutil.ignore_patterns("__pycache__"))
    (bug / "local_dp").rename(bug / "local_dp_bug")
    toml = bug / "pyproject.toml"
    toml.write_text(toml.read_text().replace("local_dp.app:client", "local_dp_bug.app:half_sensitivity_client")
                    .replace("local_dp.app:server", "local_dp_bug.app:server"))
    code, broken = audit(tmp_path, monkeypatch, bug, "--num-supernodes", "4")
    assert code == 1 and {"local-sensitivity-below-clip", "understated-local-epsilon"} <= critical(broken)
    sigma = 0.5 * math.sqrt(2 * math.log(1.25 / 1e-5)) / 2.0  # the classic calibration, scaled by sensitivity 0.5
    mu = math.sqrt(3) * 1.0 / sigma
    for row in broken["local_dp"].values():
        eps = row["composed_epsilon"]
        delta = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
        assert delta == pytest.approx(1e-5, rel=1e-4)


def test_canaries_without_a_central_dp_wrapper_are_refused_saying_flower_started(tmp_path, monkeypatch, capsys):
    flower_runtime_in_process(monkeypatch)
    assert main(["flower", str(APPS / "opacus_kept"), "--canaries", "40"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no Flower central-DP wrapper" in err and "Flower had started" in err


def test_an_app_failing_while_flower_runs_it_is_one_line_naming_its_error(tmp_path, monkeypatch, capsys):
    """The app's own error (here its main reads a run-config key it never declared) is reported in one line, as the
    app's, not as ours."""
    import shutil

    broken = tmp_path / "waiting_broken"
    shutil.copytree(APPS / "waiting_main", broken, ignore=shutil.ignore_patterns("__pycache__"))
    (broken / "waiting_main").rename(broken / "waiting_broken")
    toml = broken / "pyproject.toml"
    toml.write_text(toml.read_text().replace("waiting_main.app", "waiting_broken.app"))
    code = broken / "waiting_broken" / "app.py"
    code.write_text(code.read_text().replace('cfg["noise-scale"]', 'cfg["noise-scales"]'))
    flower_runtime_in_process(monkeypatch)
    assert main(["flower", str(broken), "--num-supernodes", "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the app failed while Flower ran it: KeyError" in err, err


def test_gradient_canaries_through_each_clients_own_optimizer(tmp_path, monkeypatch, capsys):
    """300 gradient canaries join each client's private steps in every round (the same coins and coordinates each
    round): a one-run bound per client, below the clients' composed epsilon on the correct app; more canaries than
    the clients' model has coordinates is one line after the run, saying Flower had started."""
    code, result = audit(tmp_path, monkeypatch, APPS / "opacus_kept", "--client-canaries", "300")
    assert code == 0 and not critical(result)
    bounds = [f for f in result["findings"] if f["code"] == "client-canary-bound"]
    assert len(bounds) == 2
    for row in result["clients"].values():
        assert 0 <= row["canary_bound"] < row["composed_epsilon"]
    flower_runtime_in_process(monkeypatch)
    assert main(["flower", str(APPS / "opacus_kept"), "--client-canaries", "400"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "holds 370" in err and "Flower had started" in err
