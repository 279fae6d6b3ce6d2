"""A small Flower app to audit: logistic regression (PyTorch) on scikit-learn's digits, split over clients.

``build_apps(settings, transcript)`` returns the ``(ServerApp, ClientApp)`` pair; the server wraps FedAvg
in Flower's ``DifferentialPrivacyServerSideFixedClipping`` and our recorder. Planted bugs
(``settings.bug``) keep the configuration identical (same z, C, m) and change only what runs:

- ``noise-cut``: the wrapper adds ``BUG_NOISE_FACTOR`` times the std it should;
- ``skip-round``: no noise on round ``BUG_ROUND``;
- ``unequal-weights``: clients report their true example counts (unequal shards), so FedAvg weights them
  unequally, while the correct app reports 1 each.
flwr is imported inside the functions only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number

BUGS = ("none", "noise-cut", "skip-round", "unequal-weights")
BUG_NOISE_FACTOR = 0.5
BUG_ROUND = 2
MAX_SCALE = 1e30  # the model is float32 (max 3.4e38): updates C and noise z C / m stay far below it


@dataclass(frozen=True)
class AppSettings:
    """Example app parameters: ``nodes`` real clients plus ``canaries`` canary clients, ``sampled`` m of
    them per round, rounds, z, C, local SGD, seed, planted bug, and ``hidden`` units (0: logistic
    regression, 64 inputs to 10 classes; else one hidden ReLU layer of that width). ``insert_canaries=False``
    (null audits): the canary clients are connected and sampled like the others but send an update of norm C
    in an independent direction (``decoy_direction``), so their own directions never enter a release."""

    nodes: int = 40
    sampled: int = 8
    rounds: int = 5
    noise_multiplier: float = 1.0
    clip: float = 1.0
    local_steps: int = 5
    learning_rate: float = 0.5
    seed: int = 0
    bug: str = "none"
    canaries: int = 0
    hidden: int = 0
    insert_canaries: bool = True

    def __post_init__(self):
        require_number("nodes", self.nodes, low=2, integer=True)
        require_number("rounds", self.rounds, low=1, integer=True)
        require_number("noise_multiplier", self.noise_multiplier, low=0, low_open=True)
        require_number("clip", self.clip, low=0, low_open=True, high=MAX_SCALE)
        if self.noise_multiplier * self.clip > MAX_SCALE:
            raise ConfigurationError("noise_multiplier", f"z * C = {self.noise_multiplier * self.clip:.3g} overflows "
                                     f"the float32 example model (at most {MAX_SCALE:g})")
        require_number("seed", self.seed, low=0, high=2**32 - 1, integer=True)  # NumPy's legacy seed range
        require_number("canaries", self.canaries, low=0, integer=True)
        require_number("sampled", self.sampled, low=1, high=self.nodes + self.canaries, integer=True)
        require_number("hidden", self.hidden, low=0, integer=True)
        if not isinstance(self.insert_canaries, bool):
            raise ConfigurationError("insert_canaries", f"expected true or false, got {self.insert_canaries!r}")
        if self.bug not in BUGS:
            raise ConfigurationError("bug", f"unknown bug {self.bug!r}; choose from {', '.join(BUGS)}")
        if self.bug == "skip-round" and self.rounds < BUG_ROUND:  # else the planted app is the correct one
            raise ConfigurationError("rounds", f"the skip-round bug skips the noise of round {BUG_ROUND}; it needs "
                                     f"at least {BUG_ROUND} rounds, got {self.rounds}")


def supernodes(settings: AppSettings) -> int:
    """Clients Flower sees: the real ones plus the canary clients (always connected)."""
    return settings.nodes + settings.canaries


FEATURES, CLASSES = 64, 10  # the example's digits: 8 x 8 pixels, 10 classes
PARAMETERS_PER_HIDDEN = FEATURES + 1 + CLASSES  # a hidden unit's weights in and out and its bias
LOGISTIC_PARAMETERS = FEATURES * CLASSES + CLASSES


def parameter_count(settings: AppSettings) -> int:
    """Parameters d of the example model: 64 x 10 + 10, or 64 h + h + 10 h + 10 with a hidden layer."""
    return PARAMETERS_PER_HIDDEN * settings.hidden + CLASSES if settings.hidden else LOGISTIC_PARAMETERS


def model_for(settings: AppSettings):
    """The example's PyTorch model: logistic regression, or an MLP with ``settings.hidden`` units."""
    import torch

    if not settings.hidden:
        return torch.nn.Linear(FEATURES, CLASSES)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, settings.hidden), torch.nn.ReLU(),
                               torch.nn.Linear(settings.hidden, CLASSES))


def canary_reply(arrays, direction: np.ndarray, clip: float):
    """The canary's answer: the current model plus ``clip`` times ``direction`` (an update of norm C for a
    unit direction; the sign is folded into ``direction``)."""
    from flwr.app import Array, ArrayRecord

    current = arrays.to_numpy_ndarrays()
    sizes = np.cumsum([a.size for a in current])[:-1]
    parts = np.split(clip * direction, sizes)
    return ArrayRecord({k: Array((a + p.reshape(a.shape)).astype(a.dtype))
                        for k, a, p in zip(arrays.keys(), current, parts, strict=True)})


def client_shards(nodes: int, seed: int, unequal: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """Digits split over ``nodes`` clients (standardised features); unequal sizes when ``unequal``."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x = (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-8)
    order = np.random.default_rng(seed).permutation(len(y))
    sizes = np.arange(1, nodes + 1, dtype=float) if unequal else np.ones(nodes)
    cuts = np.floor(np.cumsum(sizes) / sizes.sum() * len(y)).astype(int)[:-1]
    return [(x[i].astype(np.float32), y[i]) for i in np.split(order, cuts)]


def local_train(model, arrays, shard, steps: int, learning_rate: float):
    """``steps`` full-batch gradient steps of ``model`` (cross-entropy) from ``arrays``."""
    import torch

    model.load_state_dict(arrays.to_torch_state_dict())
    optimiser = torch.optim.SGD(model.parameters(), lr=learning_rate)
    features, labels = torch.from_numpy(shard[0]), torch.from_numpy(shard[1]).long()
    for _ in range(steps):
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(model(features), labels).backward()
        optimiser.step()
    return model.state_dict()


def build_client_app(settings: AppSettings):
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp

    app = ClientApp()
    unequal = settings.bug == "unequal-weights"

    @app.train()
    def train(msg, context):
        partition = int(context.node_config["partition-id"])
        if partition >= settings.nodes:  # canary client j: current + s_j C u_j
            from dpfed.flower.canaries import canary_direction, canary_signs, decoy_direction

            arrays = msg.content["arrays"]
            dim = sum(a.size for a in arrays.to_numpy_ndarrays())
            j = partition - settings.nodes
            if settings.insert_canaries:
                direction = canary_signs(settings.canaries, settings.seed)[j] * canary_direction(j, dim, settings.seed)
            else:  # null audit: an update of the same norm in a direction independent of the canary's
                direction = decoy_direction(j, dim, settings.seed)
            metrics = MetricRecord({"num-examples": 1, "partition-id": partition})
            content = RecordDict({"arrays": canary_reply(arrays, direction, settings.clip), "metrics": metrics})
            return Message(content=content, reply_to=msg)
        shard = client_shards(settings.nodes, settings.seed, unequal)[partition]
        state = local_train(model_for(settings), msg.content["arrays"], shard, settings.local_steps,
                            settings.learning_rate)
        count = len(shard[1]) if unequal else 1
        metrics = MetricRecord({"num-examples": count, "partition-id": partition})  # the auditor's node map
        content = RecordDict({"arrays": ArrayRecord(state), "metrics": metrics})
        return Message(content=content, reply_to=msg)

    return app


def dp_wrapper_class(bug: str):
    """Flower's server-side fixed-clipping wrapper, or a subclass with a planted noise bug."""
    from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping as Base
    from flwr.supercore.differential_privacy import add_gaussian_noise_inplace, compute_stdv

    if bug not in ("noise-cut", "skip-round"):
        return Base

    class Planted(Base):
        def aggregate_train(self, server_round, replies):
            self._round = server_round
            return super().aggregate_train(server_round, replies)

        def _add_noise_to_aggregated_arrays(self, aggregated):
            if bug == "skip-round" and self._round == BUG_ROUND:
                return aggregated
            from flwr.app import Array, ArrayRecord

            arrays = aggregated.to_numpy_ndarrays()
            std = compute_stdv(self.noise_multiplier, self.clipping_norm, self.num_sampled_clients)
            add_gaussian_noise_inplace(arrays, std * (BUG_NOISE_FACTOR if bug == "noise-cut" else 1.0))
            return ArrayRecord({k: Array(np.asarray(v)) for k, v in zip(aggregated.keys(), arrays, strict=True)})

    return Planted


def build_strategy(settings: AppSettings, transcript):
    """FedAvg sampling m of N, wrapped in Flower's DP wrapper (or its planted variant) and our recorder."""
    from flwr.serverapp.strategy import FedAvg

    from dpfed.flower.recorder import recording_strategy

    total = supernodes(settings)
    fedavg = FedAvg(fraction_train=settings.sampled / total, min_train_nodes=settings.sampled,
                    min_available_nodes=total, fraction_evaluate=0.0, min_evaluate_nodes=0)
    dp = dp_wrapper_class(settings.bug)(fedavg, settings.noise_multiplier, settings.clip, settings.sampled)
    return recording_strategy(dp, transcript)


def build_server_app(settings: AppSettings, transcript, result: dict):
    import torch
    from flwr.app import ArrayRecord
    from flwr.serverapp import ServerApp

    app = ServerApp()

    @app.main()
    def main(grid, context):
        import random

        random.seed(settings.seed)  # Flower samples with Python's global generator
        np.random.seed(settings.seed)  # and its DP wrappers draw the noise from NumPy's global one
        torch.manual_seed(settings.seed)
        strategy = build_strategy(settings, transcript)
        result["strategy"] = strategy
        initial = ArrayRecord(model_for(settings).state_dict())
        result["initial"] = initial.to_numpy_ndarrays()
        result["final"] = strategy.start(grid=grid, initial_arrays=initial, num_rounds=settings.rounds).arrays

    return app
