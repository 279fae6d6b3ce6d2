"""Federated linear regression in NumPy, in Flower's Message API: Flower's
``DifferentialPrivacyServerSideFixedClipping`` around the strategy the run config's ``strategy`` names, each with
Flower's defaults (``MyAdam`` is a ``FedAdam`` of this app's own that keeps the norm of each aggregate).

``eta`` sets the server optimizer's learning rate (0: Flower's default). Each node holds 64 examples of 20
features, half of which do not matter (their true weight is 0).
"""

import random

import numpy as np
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import (
    DifferentialPrivacyServerSideFixedClipping,
    FedAdagrad,
    FedAdam,
    FedAvg,
    FedAvgM,
    FedMedian,
    FedProx,
    FedTrimmedAvg,
    FedYogi,
)

FEATURES = 20
TRUE_WEIGHTS = np.r_[np.linspace(-1.0, 1.0, FEATURES // 2), np.zeros(FEATURES // 2), 0.5]

server = ServerApp()
client = ClientApp()


def local_data(partition: int):
    rng = np.random.default_rng(900 + partition)
    x = np.c_[rng.normal(size=(64, FEATURES)), np.ones(64)]
    return x, x @ TRUE_WEIGHTS + 0.1 * rng.normal(size=64)


@client.train()
def train(msg: Message, context: Context) -> Message:
    w = msg.content["arrays"].to_numpy_ndarrays()[0].astype(np.float64)
    x, y = local_data(int(context.node_config["partition-id"]))
    for _ in range(5):
        w = w - 0.05 * x.T @ (x @ w - y) / len(y)
    return Message(RecordDict({"arrays": ArrayRecord([w.astype(np.float32)]),
                               "metrics": MetricRecord({"num-examples": len(y)})}), reply_to=msg)


class MyAdam(FedAdam):
    """FedAdam that keeps the norm of every model it returns."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.norms = []

    def aggregate_train(self, server_round, replies):
        arrays, metrics = super().aggregate_train(server_round, replies)
        if arrays is not None:
            self.norms.append(float(np.linalg.norm(arrays.to_numpy_ndarrays()[0])))
        return arrays, metrics


STRATEGIES = {"FedAvg": FedAvg, "FedProx": FedProx, "FedAdam": FedAdam, "FedYogi": FedYogi,
              "FedAdagrad": FedAdagrad, "FedAvgM": FedAvgM, "FedMedian": FedMedian,
              "FedTrimmedAvg": FedTrimmedAvg, "MyAdam": MyAdam}


@server.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    random.seed(int(cfg["seed"]))
    np.random.seed(int(cfg["seed"]))
    m = int(cfg["clients-per-round"])
    options = {"fraction_train": 1e-9, "min_train_nodes": m, "min_available_nodes": m, "fraction_evaluate": 0.0}
    if float(cfg["eta"]) > 0:
        options["eta"] = float(cfg["eta"])
    if cfg["strategy"] == "FedAvgM":
        options.update(server_learning_rate=float(cfg["server-learning-rate"]),
                       server_momentum=float(cfg["server-momentum"]))
    inner = STRATEGIES[str(cfg["strategy"])](**options)
    strategy = DifferentialPrivacyServerSideFixedClipping(inner, float(cfg["noise-multiplier"]),
                                                          float(cfg["clipping-norm"]), m)
    strategy.start(grid=grid, initial_arrays=ArrayRecord([np.zeros(FEATURES + 1, dtype=np.float32)]),
                   num_rounds=int(cfg["num-server-rounds"]))
