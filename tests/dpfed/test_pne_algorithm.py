"""Fed-PNE: schedule, elimination invariants, communication, determinism, hooks."""

import math

import numpy as np
import pytest

from accounting.errors import ConfigurationError
from dpfed.pne import ObservationNoise, Partition, PNEConfig, RewardOverride, get_objective, run_fed_pne
from dpfed.pne.algorithm import TAU_CAP
from dpfed.pne.seeding import RunStreams

NOISE_FREE = ObservationNoise("none")


def test_thresholds_match_the_worked_schedule_of_the_notes():
    # notes section 2.6: M = 10, T = 2000, conf_delta = 0.1, c = 0.1: tau = 1, 1, 2, 7, 26, 102, 406, 1623
    cfg = PNEConfig(horizon=2000, num_clients=10)
    assert [cfg.tau(h) for h in range(8)] == [1, 1, 2, 7, 26, 102, 406, 1623]
    run = run_fed_pne("garland", 10, 2000, seed=0)
    # first phase at depth 3 with 8 nodes and t = 1; then t = 3, 11, 41, 163 and a truncated t = 650
    assert (run.phases[0].depth, len(run.phases[0].nodes), run.phases[0].pulls) == (3, 8, 1)
    assert [p.pulls for p in run.phases] == [1, 3, 11, 41, 163, 650]
    assert [p.completed for p in run.phases] == [True] * 5 + [False]


@pytest.mark.parametrize("name, constants", [("garland", {}), ("himmelblau", {}), ("doublesine", {"rho": 0.8})])
def test_elimination_never_removes_the_node_holding_the_optimum_noise_free(name, constants):
    # DoubleSine satisfies the smoothness assumption f* - f(x_{h,i}) <= nu1 rho^h only for rho >= 0.8
    # (its gap near 0.5 decays like 0.8^h), so it is run with rho = 0.8; at rho = 0.5 it is violated.
    obj = get_objective(name)
    for clients in (1, 10, 50):
        for seed in range(2):
            run = run_fed_pne(name, clients, 20_000, seed=seed, noise=NOISE_FREE, **constants)
            part = Partition(obj.domain, seed=RunStreams.from_seed(seed).partition_seed)
            for phase in run.phases:
                holding = part.containing(obj.x_star, phase.depth) & set(phase.nodes)
                assert holding, f"optimum lost before phase {phase.phase}"
                if phase.completed:
                    assert not all(key in phase.eliminated for key in holding)


def test_phase_invariants():
    for clients in (1, 7, 30):
        run = run_fed_pne("himmelblau", clients, 30_000, seed=clients)
        cfg = PNEConfig(horizon=30_000, num_clients=clients)
        completed = [p for p in run.phases if p.completed]
        assert sum(len(p.nodes) for p in completed) <= run.horizon
        for p in run.phases:
            assert {d for d, _ in p.nodes} == {p.depth}  # one depth per phase
            assert p.pulls >= 1 and clients * p.pulls >= p.tau == cfg.tau(p.depth)
        for p in completed:
            assert p.best not in p.eliminated and len(p.eliminated) < len(p.nodes)
            assert p.radius <= cfg.nu1 * cfg.rho**p.depth + 1e-15  # b <= nu1 rho^h once T_{h,i} >= tau_h
        assert np.all(np.isfinite(run.instant_regret)) and run.points.shape == (30_000, 2)
        assert run.phases[-1].start + run.phases[-1].pulls * len(run.phases[-1].nodes) >= run.horizon


def test_communication_rounds_grow_logarithmically_in_the_horizon():
    horizons = np.array([1_000, 3_000, 10_000, 30_000, 100_000])
    for clients in (1, 10, 50):
        rounds = np.array([run_fed_pne("garland", clients, int(t), seed=1).communication_rounds for t in horizons])
        slope = np.polyfit(np.log10(horizons), rounds, 1)[0]
        # one phase per depth and tau_h grows 4x per level: about log_4(10) = 1.66 rounds per decade
        assert 0.8 <= slope <= 2.5, (clients, rounds)
        assert np.all(np.diff(rounds) >= 0)
        # appendix C.2 bound on the number of phases (+1 for the root phase), never linear growth
        bound = np.log(clients * horizons / (2 * 0.1**2)) / np.log(4) + 1
        assert np.all(rounds <= bound)
        assert rounds[-1] <= 3 * rounds[0]


def test_transcript_and_counters_agree():
    run = run_fed_pne("garland", 5, 5_000, seed=3)
    uploads = run.transcript.filter(name="local_means", receiver="server")
    assert len(uploads) == 5 * run.communication_rounds
    assert sum(len(m.payload["means"]) for m in uploads) == run.uplink_floats
    broadcasts = run.transcript.filter(name="schedule", receiver="*")
    assert len(broadcasts) == len(run.phases)
    assert [b.payload["pulls"] for b in broadcasts] == [p.pulls for p in run.phases]
    assert {m.sender for m in uploads} == {f"agent{i}" for i in range(5)}


def test_same_seed_same_run_and_different_seed_differs():
    a = run_fed_pne("doublesine", 8, 4_000, seed=42)
    b = run_fed_pne("doublesine", 8, 4_000, seed=np.random.SeedSequence(42))
    assert np.array_equal(a.instant_regret, b.instant_regret)
    assert a.transcript.to_dict() == b.transcript.to_dict()
    c = run_fed_pne("doublesine", 8, 4_000, seed=43)
    assert not np.array_equal(
        a.transcript.to_dict()["messages"][1]["payload"]["means"],
        c.transcript.to_dict()["messages"][1]["payload"]["means"],
    )


def test_more_clients_lower_per_client_regret():
    # notes section 2.6 (independent sketch): M = 1: 414, M = 10: 271, M = 50: 203 at T = 2000
    # Deterministic with these seeds. Over 30 other seeds one run gave 417.6 +- 13.7 (M = 1), 265.0 +- 4.4
    # (M = 10), 203.4 +- 0.8 (M = 50): means of 6 are >= 14 sd inside the bands and the orderings hold by
    # >= 9 sd, so the false-failure probability for random seeds is < 1e-9.
    regret = {m: np.mean([run_fed_pne("garland", m, 2000, seed=s).final_regret for s in range(6)]) for m in (1, 10, 50)}
    assert regret[1] > regret[10] > regret[50]
    assert 330 < regret[1] < 500 and 150 < regret[50] < 260


def test_reward_override_replaces_exactly_one_raw_reward():
    base = run_fed_pne("garland", 4, 2_000, seed=5, noise=NOISE_FREE, heterogeneity=0.0)
    phase = base.phases[1]
    node = phase.nodes[2]
    forced = run_fed_pne(
        "garland",
        4,
        2_000,
        seed=5,
        noise=NOISE_FREE,
        heterogeneity=0.0,
        reward_override=RewardOverride(client=3, depth=node[0], index=node[1], value=5.0),
    )

    def upload(run, client):
        msg = run.transcript.filter(name="local_means", sender=f"agent{client}", round=2)[0].payload
        return msg["means"][msg["nodes"].index(node)]

    t = phase.pulls
    assert forced.parameters["override_applied"] == 1 and base.parameters["override_applied"] == 0
    assert upload(forced, 3) == pytest.approx(upload(base, 3) + (5.0 - upload(base, 3)) / t)
    assert upload(forced, 2) == upload(base, 2)


def test_final_upload_sends_partial_means_of_the_truncated_phase():
    plain = run_fed_pne("garland", 3, 1_500, seed=2)
    partial = run_fed_pne("garland", 3, 1_500, seed=2, final_upload=True)
    assert not plain.phases[-1].completed
    assert partial.communication_rounds == plain.communication_rounds + 1
    last = partial.transcript.filter(name="local_means", round=len(partial.phases))
    assert len(last) == 3 and 0 < len(last[0].payload["means"]) <= len(partial.phases[-1].nodes)
    assert np.array_equal(plain.instant_regret, partial.instant_regret)


def test_exactly_horizon_pulls_even_for_tiny_horizons():
    for horizon in (1, 2, 17):
        run = run_fed_pne("garland", 3, horizon, seed=0)
        assert run.instant_regret.shape == (horizon,) and run.regret.shape == (horizon,)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"horizon": 0}, "horizon"),
        ({"clients": 0}, "clients"),
        ({"rho": 1.5}, "rho"),
        ({"expansion": "both"}, "expansion"),
    ],
)
def test_bad_configuration_names_the_field(kwargs, field):
    args = {"clients": 3, "horizon": 100, **kwargs}
    with pytest.raises(ConfigurationError, match=field):
        run_fed_pne("garland", seed=0, **args)


def test_prose_expansion_rule_stops_earlier_or_equal():
    cfg_p = PNEConfig(horizon=2000, num_clients=10, expansion="prose")
    cfg_c = PNEConfig(horizon=2000, num_clients=10)
    assert not cfg_p.needs_expansion(5, 2) and cfg_c.needs_expansion(5, 2)  # 5 * tau_2 = 10: "<" vs "<="
    assert math.isclose(cfg_c.radius(10), 0.1 * math.sqrt(math.log(2000 / 0.1) / 10))


def test_override_outside_the_run_is_reported_or_rejected():
    missing = run_fed_pne("garland", 2, 500, seed=0, reward_override=RewardOverride(0, 30, 1, 1.0))
    assert missing.parameters["override_applied"] == 0
    every = run_fed_pne(
        "garland", 2, 500, seed=0, reward_override=RewardOverride(1, *missing.phases[1].nodes[0], 1.0, pull=None)
    )
    assert every.parameters["override_applied"] == missing.phases[1].pulls
    with pytest.raises(ConfigurationError, match="override client"):
        run_fed_pne("garland", 2, 500, seed=0, reward_override=RewardOverride(2, 3, 1, 1.0))


@pytest.mark.parametrize("constants", [{"nu1": 1e-300}, {"c": 1e300}, {"conf_delta": 1e-320}])
def test_a_root_that_needs_more_samples_than_any_run_plays_the_root(constants):
    # tau = c^2 log(c1 T / conf_delta) / nu1^2 rho^(-2h) overflowed (OverflowError, ZeroDivisionError:
    # exit 4). A root needing more than T M samples is never completed and never expanded, so every pull
    # plays the domain's centre (the root's cell) and no phase uploads.
    config = PNEConfig(horizon=40, num_clients=3, **constants)
    assert config.tau(0) > 40 * 3 and config.first_phase_nodes() == 1
    run = run_fed_pne("garland", 3, 40, seed=0, **constants)
    centre = get_objective("garland").domain.mean(axis=1)
    assert np.allclose(run.instant_regret, get_objective("garland").regret(centre[None, :])[0])
    assert run.communication_rounds == 0


def test_a_vanishing_rho_makes_depth_one_unreachable():
    # rho^(-2h) overflowed at h = 1; tau_0 = 1, so the root is split once and its children never complete
    config = PNEConfig(horizon=40, num_clients=3, rho=1e-300)
    assert config.tau(0) == 1 and config.tau(1) == TAU_CAP and config.first_phase_nodes() == 2
    assert run_fed_pne("garland", 3, 40, seed=0, rho=1e-300).communication_rounds == 0


def test_first_phase_nodes_follow_the_expansion_rule():
    # defaults, T = 1000, M = 10: tau_h = ceil(0.01 ln(10^4) 4^h) = 1, 1, 2, 6 for h = 0..3, so the root is
    # expanded while tau <= 1 (to depth 2) and then while nodes * tau <= 10: k = 2 goes to depth 3 (8
    # nodes), k = 3 stops at depth 2 (9 nodes x 2 > 10).
    assert [PNEConfig(1000, 10).tau(h) for h in range(4)] == [1, 1, 2, 6]
    assert PNEConfig(1000, 10).first_phase_nodes() == 8
    assert PNEConfig(1000, 10, k=3).first_phase_nodes() == 9
    assert PNEConfig(1000, 10, k=10**6).first_phase_nodes() == 10**12
