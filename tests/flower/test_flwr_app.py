"""Real flwr objects and a real run of the example app project, through the ``flower-app`` probe as ``dpaudit
flower`` runs it (skipped without the flower extra), on the in-process grid (``tests/flower/inprocess_grid.py``:
the project's ServerApp, Flower's strategy and the ClientApps, without Ray's 20-60 s start and stop; the example
app on Flower's simulation engine is the README's ``dpaudit audit configs/audit_flower.toml`` command, run by
``tests/test_readme_flower_commands.py``).

Run: the example app (dpfed/flower/example_app), 8 SuperNodes and 40 canary SuperNodes, all 48 trained a round (a
fixed count keeps the deployment's rate with canaries only where every node is sampled: 8 of 8), z = 1, C = 1, 3
rounds. The transcript check tests at
alpha = 1e-3 per check kind (a false failure with probability below ~4e-3). Flower's DP wrapper draws its noise
from NumPy's global generator, which the example's ServerApp seeds, so every round's noise is the seed's draw
(``test_released_noise_is_the_seeds_draw``).
"""

from pathlib import Path

import pytest

flwr = pytest.importorskip("flwr", reason="flwr is not installed (pip install -e '.[flower]')")

from dpfed.flower.read import config_from_local_dp_mod, config_from_strategy  # noqa: E402
from dpfed.flower.records import releases  # noqa: E402
from dpfed.transcript import Transcript  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "dpfed" / "flower" / "example_app"
NODES, CANARIES = 8, 40
SAMPLED = NODES + CANARIES
RUN_CONFIG = {"num-server-rounds": 3, "clients-per-round": SAMPLED, "seed": 0}
# a Flower run of 48 nodes (in process): slow, so tests/conftest.py starts this module early
pytestmark = pytest.mark.slow


def test_reads_every_wrapper_and_the_sample_size():
    from flwr.serverapp import strategy as s

    fedavg = s.FedAvg(fraction_train=0.25, min_train_nodes=3)
    wrappers = {
        "server-fixed": s.DifferentialPrivacyServerSideFixedClipping(fedavg, 1.5, 0.7, 25),
        "client-fixed": s.DifferentialPrivacyClientSideFixedClipping(fedavg, 1.5, 0.7, 25),
        "server-adaptive": s.DifferentialPrivacyServerSideAdaptiveClipping(fedavg, 1.5, 25, initial_clipping_norm=0.7),
        "client-adaptive": s.DifferentialPrivacyClientSideAdaptiveClipping(fedavg, 1.5, 25, initial_clipping_norm=0.7),
    }
    for kind, wrapper in wrappers.items():
        config, configured = config_from_strategy(wrapper, nodes=100, rounds=10)
        assert (config.kind, config.sampled, configured) == (kind, 25, 25)  # max(int(100 * 0.25), 3)
        assert config.clip == 0.7
        assert config.noise_multiplier == pytest.approx(1.5, rel=1e-12)  # adaptive: z recovered from z_u, sigma_b
    few, _ = config_from_strategy(wrappers["server-fixed"], nodes=8, rounds=10)
    assert few.sampled == 3  # int(8 * 0.25) = 2 < min_train_nodes = 3


def test_reads_local_dp_mod():
    from flwr.clientapp.mod import LocalDpMod

    config = config_from_local_dp_mod(LocalDpMod(1.0, 1.0, 4.0, 1e-5), nodes=20, sampled=5, rounds=3)
    assert (config.kind, config.local_epsilon, config.local_delta, config.clip) == ("local", 4.0, 1e-5, 1.0)


@pytest.fixture(scope="module")
def correct():
    from attacks.probes import get_probe
    from tests.flower.inprocess_grid import flower_runtime_in_process

    probe = get_probe("flower-app", app=str(EXAMPLE), run_config=RUN_CONFIG, num_supernodes=NODES)
    with pytest.MonkeyPatch.context() as patch:
        flower_runtime_in_process(patch)
        outcome = probe.run_once(CANARIES, 5, 100.0, 1e-5, 0.95)
    return probe, outcome


def test_recorder_and_host_wrap_the_strategy_the_serverapp_starts(correct):
    """The run observed the strategy the app's main built, where it started it (Strategy.start), and recorded it."""
    from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping

    probe, outcome = correct
    run = probe.observe(CANARIES, 5)  # the fixture's run (reused, not run again)
    [started] = run.starts
    assert type(started.observed.strategy) is DifferentialPrivacyServerSideFixedClipping
    assert started.observed.rounds == 3 and started.observed.api == "message"
    assert started.recorder is not None and started.host is not None
    assert outcome.details["starts"][0]["recorded_rounds"] == [1, 2, 3]


def test_correct_app_passes_and_records_every_round(correct):
    _, outcome = correct
    assert not [f for f in outcome.findings if f["severity"] == "critical"], outcome.findings
    records = releases(Transcript.from_dict(outcome.details["transcript"]))
    assert [r for r, _ in records] == [1, 2, 3]
    for _, payload in records:
        assert len(payload["sampled"]) == SAMPLED and len(set(payload["sampled"])) == SAMPLED
        assert payload["population"] == NODES + CANARIES  # the canary SuperNodes are connected like the others
        assert payload["weights"] == pytest.approx([1 / SAMPLED] * SAMPLED)
        assert payload["noise_std"] == pytest.approx(1.0 * 1.0 / SAMPLED, rel=0.15)  # 650 coordinates: ~3% sd
    details = outcome.details
    assert (details["population"], details["config"]["sampled"]) == (NODES, NODES)  # accounted as the deployment


def test_released_noise_is_the_seeds_draw(correct):
    """Each round's recorded noise is the next draw of NumPy's legacy generator at the seed (std z C / m on
    the weight, then the bias), to the float32 rounding of the release: the same seed, the same noise."""
    import numpy as np

    draws = np.random.RandomState(RUN_CONFIG["seed"])
    for _, payload in releases(Transcript.from_dict(correct[1].details["transcript"])):
        expected = np.concatenate([draws.normal(0, 1.0 * 1.0 / SAMPLED, shape).astype(np.float32).ravel()
                                   for shape in ((10, 64), (10,))])
        assert np.asarray(payload["noise"]) == pytest.approx(expected, abs=1e-5)


def test_canary_scores_of_both_threat_models_are_recorded(correct):
    import numpy as np

    canaries = correct[1].details["canaries"]
    assert canaries["dim"] == 650 and len(canaries["signs"]) == CANARIES and canaries["rounds"] == 3
    assert 0 < sum(s > 0 for s in canaries["signs"]) < CANARIES
    for model in ("final_model", "all_iterates"):
        scores = np.asarray(canaries[model]["scores"])
        assert scores.shape == (CANARIES,) and np.all(np.abs(scores) <= 1)
    assert not np.allclose(canaries["final_model"]["scores"], canaries["all_iterates"]["scores"])


def test_measured_shift_counts_the_rounds_each_canary_replied_in(correct):
    """40 canaries of 48 nodes, all trained every round: the canary-rounds are the canary replies in the transcript
    (the nodes the host saw answer as canaries), each canary in each of the 3 rounds; the sampling rate is 1."""
    measured = correct[1].details["canaries"]["measured_shift"]
    assert measured["releases"] == 3 and measured["rate"] == pytest.approx(1.0)
    assert measured["configured_shift"] == pytest.approx(1.0)
    assert measured["participations"] == 3 * CANARIES
    assert measured["estimate"]["epsilon"] >= 0


def test_canary_reply_is_an_update_of_norm_clip():
    import numpy as np
    from flwr.app import Array, ArrayRecord

    from dpfed.flower.canaries import canary_directions
    from dpfed.flower.canary_mod import shifted

    current = ArrayRecord({"w": Array(np.zeros((10, 64), np.float32)), "b": Array(np.ones(10, np.float32))})
    direction = canary_directions(1, 650, 3)[0]
    reply = shifted(current, -direction, 0.7)
    update = np.concatenate([a.ravel() for a in reply.to_numpy_ndarrays()]) - np.r_[np.zeros(640), np.ones(10)]
    assert np.linalg.norm(update) == pytest.approx(0.7, rel=1e-6)
    assert update == pytest.approx(-0.7 * direction, abs=1e-6)


def test_claims_on_the_example_strategy_carry_the_corrected_epsilon(correct):
    from attacks.flower_checks.check import check_config
    from attacks.probes.flower import assumptions_for

    strategy = correct[0].observe(CANARIES, 5).starts[0].observed.strategy
    config, configured = config_from_strategy(strategy, nodes=SAMPLED, rounds=3)
    out = check_config(config, 1e-5, configured, claims=("no-amplification", "z-unchanged"))
    by_code = {f.code: f for f in out["findings"]}
    assert by_code["understated-z-unchanged"].values["corrected_epsilon"] == out["rows"]["runs"]["epsilon"]
    assert assumptions_for(config).noise_std == pytest.approx(1 / SAMPLED)


@pytest.mark.parametrize("method, relation, row", [("without-replacement", "replace-one", "z-unchanged"),
                                                   ("no-amplification", "add-or-remove-one", "no-amplification")])
def test_flowers_own_accountant_beside_our_rows(method, relation, row):
    """Flower 1.42's RdpAccountant on the issue's setting: without replacement it hands z unchanged to
    dp-accounting (our ``z-unchanged`` row, 14.05, against the corrected 83.9); without amplification it is
    RDP, so at least our tight (PLD) row for the same model."""
    from flwr.serverapp import GaussianPrivacyEvent, NeighboringRelation, PrivacyConfig, RdpAccountant, SamplingMethod

    from dpfed.flower.config import FlowerDpConfig, accounted_rows

    config = PrivacyConfig(target_delta=1e-5, population_size=100, neighboring_relation=NeighboringRelation(relation),
                           sampling_method=SamplingMethod(method))
    accountant = RdpAccountant(config)
    accountant.compose(GaussianPrivacyEvent(noise_multiplier=1.0, sample_size=10, population_size=100), 100)
    flower = accountant.get_epsilon(1e-5)
    rows = accounted_rows(FlowerDpConfig("server-fixed", 100, 100, 10, 1.0), 1e-5)
    if row == "z-unchanged":
        assert flower == pytest.approx(rows[row]["epsilon"], rel=1e-6)
        assert flower < rows["runs"]["epsilon"] / 5
    else:
        assert rows[row]["epsilon"] <= flower <= 1.1 * rows[row]["epsilon"]
        from tests.flower.documented import find, printed, section

        table = section("BENCHMARKS.md", "## Flower")
        documented = find(r"\| no-amplification \|.*\| [\d.]+ \(Flower's RDP: ([\d.]+)\) \|", table)
        assert printed(documented[1], flower)  # BENCHMARKS' configuration table, to its printed decimals
