"""The replay of a DP wrapper's inner strategy (``dpfed.flower.sensitivity``) and its check
(``attacks.flower_checks.sensitivity_check``), on Flower's own strategy objects, without a simulation.

Each round is driven as Flower drives it: the wrapper (Flower's ``DifferentialPrivacyServerSideFixedClipping``,
Message API or legacy) clips the replies and calls its inner strategy, whose aggregation the replay repeats. The
references are closed forms: for a mean of m clipped updates c_i, the largest change over the neighbours the replay
tries is (|c_i| + C) / m (c_i replaced by -C c_i/|c_i|), |c_i| / m with c_i taken out, |c_i - mean of the rest| / m
with the reply left out; for FedAdam's first round with tau ~ 0, every coordinate of the step is eta_1 sign(mean
update) (Reddi et al. 2021, with Kingma and Ba's bias correction eta_1 = eta sqrt(1 - beta_2^2) / (1 - beta_1^2)
at Flower's round 1), so flipping the sign of all d coordinates moves the output by 2 eta_1 sqrt(d). Every input is
fixed (no randomness): the tests cannot fail by chance.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

pytest.importorskip("flwr")

from attacks.flower_checks.assumptions import Assumptions  # noqa: E402
from attacks.flower_checks.sensitivity_check import sensitivity_findings  # noqa: E402
from dpfed.flower.neighbours import _flipping, neighbours  # noqa: E402
from dpfed.flower.recorder import _flat  # noqa: E402
from dpfed.flower.replay_runners import copy_messages, copy_results, legacy_runner, message_runner  # noqa: E402
from dpfed.flower.sensitivity import RoundReplay  # noqa: E402

SERVER_NODE = 1


def clipped(updates: np.ndarray, clip: float) -> np.ndarray:
    norms = np.linalg.norm(updates, axis=1, keepdims=True)
    return updates * np.minimum(1.0, clip / norms)


def message_round(inner, updates: np.ndarray, clip: float, z: float = 1.0) -> dict:
    """One round of Flower's Message-API wrapper around ``inner`` on replies ``updates`` (from a zero model), with the
    replay; returns the measurement."""
    from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
    from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping
    from flwr.supercore.task_identity import TaskIdentity

    from tests.flower.inprocess_grid import InProcessGrid

    m, d = updates.shape
    grid = InProcessGrid(None, m)
    wrapper = DifferentialPrivacyServerSideFixedClipping(inner, z, clip, m)
    current = np.zeros(d, dtype=np.float32)
    instructions = list(wrapper.configure_train(1, ArrayRecord([current]), ConfigRecord(), grid))
    replies = []
    for instruction, update in zip(instructions, updates, strict=True):
        TaskIdentity.node_id = instruction.metadata.dst_node_id
        replies.append(Message(RecordDict({"arrays": ArrayRecord([(current + update).astype(np.float32)]),
                                           "metrics": MetricRecord({"num-examples": 10})}), reply_to=instruction))
        TaskIdentity.node_id = SERVER_NODE
    replay = RoundReplay(inner, "aggregate_train", copy_messages)
    with replay.watching():
        wrapper.aggregate_train(1, replies)
    real = replay.real[0][0] if replay.real else None
    return replay.measure(message_runner(1, current.astype(float), _flat),
                          None if real is None else _flat(real.to_numpy_ndarrays()), current.astype(float), clip)


class Proxy:
    def __init__(self, node: int):
        self.cid, self.node_id = str(node), node


def legacy_round(inner, updates: np.ndarray, clip: float, z: float = 1.0) -> dict:
    """One round of Flower's legacy wrapper around ``inner`` on results ``updates`` (from a zero model)."""
    from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays
    from flwr.server.strategy import DifferentialPrivacyServerSideFixedClipping

    m, d = updates.shape
    wrapper = DifferentialPrivacyServerSideFixedClipping(inner, z, clip, m)
    current = np.zeros(d, dtype=np.float32)
    wrapper.current_round_params = [current]  # what its configure_fit sets first (its sampling needs no test here)
    results = [(Proxy(100 + i), FitRes(Status(Code.OK, ""), ndarrays_to_parameters([(current + u).astype(np.float32)]),
                                       10, {})) for i, u in enumerate(updates)]
    replay = RoundReplay(inner, "aggregate_fit", copy_results)
    with replay.watching():
        wrapper.aggregate_fit(1, results, [])
    real = replay.real[0][0] if replay.real else None
    return replay.measure(legacy_runner(1, current.astype(float), _flat, lambda proxy: proxy.node_id),
                          None if real is None else _flat(parameters_to_ndarrays(real)), current.astype(float), clip)


def fed_avg(api: str):
    if api == "message":
        from flwr.serverapp.strategy import FedAvg

        return FedAvg(fraction_train=1.0, min_train_nodes=2, min_available_nodes=2, fraction_evaluate=0.0)
    from flwr.server.strategy import FedAvg

    return FedAvg(fraction_fit=1.0, min_fit_clients=2, min_available_clients=2, fraction_evaluate=0.0)


def fed_prox(api: str):
    if api == "message":
        from flwr.serverapp.strategy import FedProx

        return FedProx(fraction_train=1.0, min_train_nodes=2, min_available_nodes=2, fraction_evaluate=0.0)
    from flwr.server.strategy import FedProx

    return FedProx(fraction_fit=1.0, min_fit_clients=2, min_available_clients=2, fraction_evaluate=0.0,
                   proximal_mu=0.1)


ROUND = {"message": message_round, "legacy": legacy_round}
UPDATES = np.random.default_rng(3).normal(size=(5, 12)) * np.array([[0.2], [0.5], [1.0], [2.0], [0.05]])


@pytest.mark.parametrize("api", ["message", "legacy"])
@pytest.mark.parametrize("make", [fed_avg, fed_prox])
def test_a_mean_moves_as_its_closed_form_and_passes(api, make):
    clip, m = 0.6, len(UPDATES)
    c = clipped(UPDATES, clip)
    norms = np.linalg.norm(c, axis=1)
    rest = [(c.sum(axis=0) - c[i]) / (m - 1) for i in range(m)]
    measured = ROUND[api](make(api), UPDATES, clip)
    assert measured["tested"], measured
    assert measured["replace"] == pytest.approx(float(np.max(norms + clip)) / m, rel=1e-5)
    assert measured["zero"] == pytest.approx(float(np.max(norms)) / m, rel=1e-5)
    assert measured["removed"] == pytest.approx(max(float(np.linalg.norm(c[i] - rest[i])) for i in range(m)) / m,
                                                rel=1e-5)
    a = Assumptions("fixed-size", m, m, 1, 1.0, clip)
    [finding] = sensitivity_findings({1: measured}, a)
    assert finding.code == "sensitivity-measured" and finding.severity == "info"
    assert finding.values["strategy"] == type(make(api)).__name__


def fed_adam(api: str):
    if api == "message":
        from flwr.serverapp.strategy import FedAdam

        return FedAdam(fraction_train=1.0, min_train_nodes=2, min_available_nodes=2, fraction_evaluate=0.0,
                       tau=1e-9)
    from flwr.common import ndarrays_to_parameters
    from flwr.server.strategy import FedAdam

    return FedAdam(fraction_fit=1.0, min_fit_clients=2, min_available_clients=2, fraction_evaluate=0.0,
                   initial_parameters=ndarrays_to_parameters([np.zeros(16, dtype=np.float32)]))


def sign_flippable(d: int, clip: float) -> np.ndarray:
    """Four replies within ``clip`` where the last three nearly cancel (their sum is 1e-4 C/sqrt(d) per coordinate,
    with the first one's signs): the first client's reply replaced by -C sign/sqrt(d) flips every coordinate."""
    signs = np.where(np.random.default_rng(7).normal(size=d) < 0, -1.0, 1.0)
    other = np.where(np.random.default_rng(8).normal(size=d) < 0, -1.0, 1.0)
    unit = clip / math.sqrt(d)
    return np.stack([0.5 * unit * signs, 0.3 * unit * other, -0.3 * unit * other, 1e-4 * unit * signs])


@pytest.mark.parametrize("api", ["message", "legacy"])
def test_fedadam_round_one_moves_by_two_eta_sqrt_d_and_is_critical(api):
    d, clip, z = 16, 0.5, 1.0
    updates = sign_flippable(d, clip)
    m = len(updates)
    measured = ROUND[api](fed_adam(api), updates, clip, z)
    assert measured["tested"], measured
    eta_1 = 0.1 * math.sqrt(1 - 0.99 ** 2) / (1 - 0.9 ** 2)
    assert measured["replace"] == pytest.approx(2 * eta_1 * math.sqrt(d), rel=1e-3)
    a = Assumptions("fixed-size", m, m, 1, z, clip)
    [finding] = sensitivity_findings({1: measured}, a)
    assert finding.code == "sensitivity-above-accounted" and finding.severity == "critical"
    ratio = 2 * eta_1 * math.sqrt(d) / (2 * clip / m)
    assert finding.values["ratio"] == pytest.approx(ratio, rel=1e-3)
    assert finding.values["effective_noise_multiplier"] == pytest.approx(z / ratio, rel=1e-3)
    assert "FedAdam" in finding.message and finding.values["strategy"] == "FedAdam"


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact epsilon of a Gaussian mechanism of mu = sensitivity / std (Balle and Wang 2018), by bisection."""
    from scipy import optimize, stats

    def excess(eps):
        return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta

    return optimize.brentq(excess, 0.0, 10 * mu * mu + 50)


def rdp_epsilon(mu: float, delta: float) -> float:
    """The classic RDP bound of a Gaussian of mu (Mironov 2017): min over alpha of alpha mu^2 / 2 + log(1/delta) /
    (alpha - 1)."""
    alphas = np.linspace(1.001, 200, 200000)
    return float(np.min(alphas * mu * mu / 2 + math.log(1 / delta) / (alphas - 1)))


def test_implied_epsilon_lies_between_the_exact_gaussian_and_its_rdp_bound():
    """Every client in every round (m = N): one round at the measured sensitivity is a Gaussian of mu = 2 ratio / z
    (replace-one); the implied epsilon, from the run's accountant (RDP), lies between its exact epsilon and the
    classic RDP bound."""
    z, clip, m, ratio, delta = 2.0, 1.0, 6, 3.0, 1e-5
    unit = clip / m
    measured = {"tested": True, "strategy": "FedAdam", "flower_strategy": "FedAdam", "clip": clip, "replies": m,
                "replace": 2 * unit * ratio, "zero": unit * ratio, "removed": unit, "slack": 0.0, "neighbours": 9,
                "replace_client": 5, "replace_neighbour": "x"}
    a = Assumptions("fixed-size", m, m, 1, z, clip, delta=delta)
    [finding] = sensitivity_findings({1: measured}, a)
    mu = 2 * ratio / z
    assert finding.values["ratio"] == pytest.approx(ratio)
    assert gaussian_epsilon(mu, delta) <= finding.values["implied_epsilon"] <= rdp_epsilon(mu, delta) * (1 + 1e-6)
    assert finding.values["implied_epsilon"] > finding.values["accounted_epsilon"]


def test_robust_aggregator_that_consumes_its_replies_is_replayed():
    """Flower's Message-API FedMedian pops the arrays out of the replies it aggregates: the replay keeps its own
    copy of them, reproduces the round's output and measures it."""
    from flwr.serverapp.strategy import FedMedian

    inner = FedMedian(fraction_train=1.0, min_train_nodes=2, min_available_nodes=2, fraction_evaluate=0.0)
    measured = message_round(inner, UPDATES, 0.6)
    assert measured["tested"], measured
    assert 0 < measured["replace"] < math.inf and measured["strategy"] == "FedMedian"


def test_a_strategy_that_cannot_be_copied_is_untested_not_passed():
    from flwr.serverapp.strategy import FedAvg

    class Locked(FedAvg):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.lock = threading.Lock()

    inner = Locked(fraction_train=1.0, min_train_nodes=2, min_available_nodes=2, fraction_evaluate=0.0)
    measured = message_round(inner, UPDATES, 0.6)
    assert not measured["tested"] and "could not be copied" in measured["reason"]
    [finding] = sensitivity_findings({1: measured}, Assumptions("fixed-size", 5, 5, 1, 1.0, 0.6))
    assert finding.code == "sensitivity-untested" and finding.severity == "medium"
    assert "Locked (a FedAvg)" in finding.message


def test_a_replay_that_does_not_reproduce_the_round_is_untested_and_leaves_the_draws_alone():
    """A subclass that draws from NumPy's global generator in its aggregation: the replay's output differs from the
    round's, so nothing is measured; the generator is where the round left it (the run's noise is unchanged)."""
    from flwr.app import Array, ArrayRecord
    from flwr.serverapp.strategy import FedAvg

    class Jittered(FedAvg):
        def aggregate_train(self, server_round, replies):
            arrays, metrics = super().aggregate_train(server_round, replies)
            [(key, array)] = list(arrays.items())
            return ArrayRecord({key: Array(array.numpy() + np.random.normal(size=array.numpy().shape))}), metrics

    np.random.seed(1)
    inner = Jittered(fraction_train=1.0, min_train_nodes=2, min_available_nodes=2, fraction_evaluate=0.0)
    replay_states = []
    original = RoundReplay.measure

    def measure(self, *args, **kwargs):
        replay_states.append(np.random.get_state()[1].copy())
        out = original(self, *args, **kwargs)
        replay_states.append(np.random.get_state()[1].copy())
        return out

    RoundReplay.measure = measure
    try:
        measured = message_round(inner, UPDATES, 0.6)
    finally:
        RoundReplay.measure = original
    assert not measured["tested"] and "did not give the round's own output" in measured["reason"]
    assert np.array_equal(replay_states[0], replay_states[1])


def test_neighbours_lie_within_the_clip_and_the_flip_flips():
    rng = np.random.default_rng(11)
    updates = clipped(rng.normal(size=(6, 30)), 1.0)
    for index in range(len(updates)):
        for _, v in neighbours(updates, index, 1.0):
            assert np.linalg.norm(v) <= 1.0 + 1e-12
    total = rng.normal(size=30) * 0.05
    flip = _flipping(total, 0.2)
    chosen = flip != 0
    assert np.linalg.norm(flip) <= 0.2 and chosen.sum() >= 1
    assert np.all(np.sign(total[chosen] + flip[chosen]) == -np.sign(total[chosen]))
