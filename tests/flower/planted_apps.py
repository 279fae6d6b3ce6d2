"""A small Flower app written as a user would, outside this project: its own model (a 30-16-2 PyTorch MLP), its
own data (scikit-learn's breast-cancer set, split over the nodes by ``partition-id``) and its own strategy
(FedAvg under one of Flower 1.42's central-DP wrappers). Nothing of ``dpfed`` is imported here.

``make_strategy(cfg)`` is the strategy its ServerApp starts and ``make_client_app(cfg)`` its ClientApp;
``server_app(cfg)`` is the ServerApp itself (for ``run_simulation``). ``cfg`` keys: ``kind`` (server-fixed,
client-fixed, server-adaptive, client-adaptive), ``nodes``, ``sampled``, ``rounds``, ``z``, ``clip``, ``seed``,
``bug``. Each planted bug is a small variant of the correct app:

- ``clip-missing``: client-side clipping, but nodes 0 and 1 run the ClientApp without the clipping mod;
- ``same-noise``: the server-side wrapper re-seeds NumPy's generator before adding its noise each round;
- ``bias-unnoised``: the server-side wrapper adds no noise to the output layer's bias (2 of 530 numbers);
- ``same-clients``: FedAvg re-seeds Python's generator in every ``configure_train`` (the same clients);
- ``noise-cut``: the server-side wrapper adds half the noise it should.
"""

from __future__ import annotations

import functools
import random

import numpy as np

BUGS = ("none", "clip-missing", "same-noise", "bias-unnoised", "same-clients", "noise-cut")
UNCLIPPED_NODES = (0, 1)
DEFAULTS = {"kind": "server-fixed", "nodes": 20, "sampled": 5, "rounds": 5, "z": 1.0, "clip": 0.5, "seed": 0,
            "bug": "none", "initial_clip": None, "count_std": 1.0, "local_steps": 3, "lr": 0.5}


def settings(**cfg) -> dict:
    out = {**DEFAULTS, **cfg}
    assert set(out) == set(DEFAULTS), sorted(set(out) - set(DEFAULTS))
    assert out["bug"] in BUGS
    return out


def make_model():
    import torch

    return torch.nn.Sequential(torch.nn.Linear(30, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


@functools.cache
def load_partition(partition: int, partitions: int, seed: int):
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    x = ((x - x.mean(axis=0)) / x.std(axis=0)).astype(np.float32)
    order = np.random.default_rng(seed).permutation(len(y))
    part = np.array_split(order, partitions)[partition]
    return x[part], y[part]


def train_locally(arrays, data, steps: int, lr: float):
    import torch

    model = make_model()
    model.load_state_dict(arrays.to_torch_state_dict())
    optimiser = torch.optim.SGD(model.parameters(), lr=lr)
    features, labels = torch.from_numpy(data[0]), torch.from_numpy(data[1]).long()
    for _ in range(steps):
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(model(features), labels).backward()
        optimiser.step()
    return model.state_dict()


def make_client_app(cfg: dict):
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.clientapp.mod import adaptiveclipping_mod, fixedclipping_mod

    mods = []
    if cfg["kind"] == "client-fixed":
        if cfg["bug"] == "clip-missing":
            def some_clip(msg, context, call_next):  # an old build of the ClientApp on two of the nodes
                if int(context.node_config["partition-id"]) in UNCLIPPED_NODES:
                    return call_next(msg, context)
                return fixedclipping_mod(msg, context, call_next)
            mods = [some_clip]
        else:
            mods = [fixedclipping_mod]
    elif cfg["kind"] == "client-adaptive":
        mods = [adaptiveclipping_mod]
    app = ClientApp(mods=mods)

    @app.train()
    def train(msg, context):
        partition = int(context.node_config["partition-id"])
        data = load_partition(partition, int(context.node_config["num-partitions"]), cfg["seed"])
        state = train_locally(msg.content["arrays"], data, cfg["local_steps"], cfg["lr"])
        content = RecordDict({"arrays": ArrayRecord(state), "metrics": MetricRecord({"num-examples": 1})})
        return Message(content=content, reply_to=msg)

    return app


def fedavg_class(cfg: dict):
    from flwr.serverapp.strategy import FedAvg

    if cfg["bug"] != "same-clients":
        return FedAvg

    class ReseededFedAvg(FedAvg):
        def configure_train(self, server_round, arrays, config, grid):
            random.seed(cfg["seed"])  # "for reproducibility", every round
            return super().configure_train(server_round, arrays, config, grid)

    return ReseededFedAvg


def wrapper_class(cfg: dict):
    from flwr.app import Array, ArrayRecord
    from flwr.serverapp import strategy as s

    base = {"server-fixed": s.DifferentialPrivacyServerSideFixedClipping,
            "client-fixed": s.DifferentialPrivacyClientSideFixedClipping,
            "server-adaptive": s.DifferentialPrivacyServerSideAdaptiveClipping,
            "client-adaptive": s.DifferentialPrivacyClientSideAdaptiveClipping}[cfg["kind"]]
    bug = cfg["bug"]
    if bug not in ("same-noise", "bias-unnoised", "noise-cut"):
        return base

    class Planted(base):
        def _add_noise_to_aggregated_arrays(self, aggregated):
            if bug == "same-noise":
                np.random.seed(cfg["seed"] + 12345)
            if bug == "noise-cut":
                std = self.noise_multiplier * self.clipping_norm / self.num_sampled_clients / 2
                arrays = [a + np.random.normal(0, std, a.shape).astype(a.dtype) for a in aggregated.to_numpy_ndarrays()]
                return ArrayRecord({k: Array(v) for k, v in zip(aggregated.keys(), arrays, strict=True)})
            noisy = super()._add_noise_to_aggregated_arrays(aggregated)
            if bug == "bias-unnoised":
                keys = list(noisy.keys())
                arrays = noisy.to_numpy_ndarrays()
                arrays[-1] = aggregated.to_numpy_ndarrays()[-1]  # the output bias as aggregated
                return ArrayRecord({k: Array(np.asarray(v)) for k, v in zip(keys, arrays, strict=True)})
            return noisy

    return Planted


def make_strategy(cfg: dict):
    """FedAvg sampling ``sampled`` of ``nodes`` with equal weights, under the DP wrapper of ``cfg['kind']``."""
    fraction = cfg["sampled"] / cfg["nodes"]
    fedavg = fedavg_class(cfg)(fraction_train=fraction, min_train_nodes=cfg["sampled"],
                               min_available_nodes=cfg["nodes"], fraction_evaluate=0.0, min_evaluate_nodes=0)
    wrapper = wrapper_class(cfg)
    if cfg["kind"].endswith("adaptive"):
        initial = cfg["initial_clip"] if cfg["initial_clip"] is not None else cfg["clip"]
        return wrapper(fedavg, cfg["z"], cfg["sampled"], initial_clipping_norm=initial,
                       clipped_count_stddev=cfg["count_std"])
    return wrapper(fedavg, cfg["z"], cfg["clip"], cfg["sampled"])


def initial_arrays(cfg: dict):
    import torch
    from flwr.app import ArrayRecord

    torch.manual_seed(cfg["seed"])
    return ArrayRecord(make_model().state_dict())


def seed_everything(cfg: dict) -> None:
    import torch

    random.seed(cfg["seed"])
    np.random.seed(cfg["seed"])  # Flower's DP wrappers draw their noise from NumPy's global generator
    torch.manual_seed(cfg["seed"])


def server_app(cfg: dict, wrap=lambda strategy: strategy, result: dict | None = None):
    """The app's ServerApp; ``wrap`` is applied to the strategy before it starts (the auditor's recorder)."""
    from flwr.serverapp import ServerApp

    app = ServerApp()

    @app.main()
    def main(grid, context):
        seed_everything(cfg)
        strategy = wrap(make_strategy(cfg))
        out = strategy.start(grid=grid, initial_arrays=initial_arrays(cfg), num_rounds=cfg["rounds"])
        if result is not None:
            result["strategy"], result["final"] = strategy, out.arrays

    return app
