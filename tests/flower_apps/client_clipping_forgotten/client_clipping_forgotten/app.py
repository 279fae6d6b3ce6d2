"""Federated linear regression in NumPy with central DP and client-side clipping, as Flower's documentation sets it
up on the server: FedAvg wrapped in ``DifferentialPrivacyClientSideFixedClipping``. The ClientApp was written
without ``fixedclipping_mod`` (Flower runs it all the same: the wrapper only sends the clip).
"""

import random

import numpy as np
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import DifferentialPrivacyClientSideFixedClipping, FedAvg

server = ServerApp()
client = ClientApp()


def local_data(partition: int, features: int):
    rng = np.random.default_rng(700 + partition)
    x = rng.normal(size=(32, features))
    return x, x @ np.linspace(-1, 1, features) + 0.1 * rng.normal(size=32)


@client.train()
def train(msg: Message, context: Context) -> Message:
    w = msg.content["arrays"].to_numpy_ndarrays()[0].astype(np.float64)
    x, y = local_data(int(context.node_config["partition-id"]), int(context.run_config["features"]))
    for _ in range(5):
        w = w - 0.05 * x.T @ (x @ w - y) / len(y)
    return Message(RecordDict({"arrays": ArrayRecord([w.astype(np.float32)]),
                               "metrics": MetricRecord({"num-examples": len(y)})}), reply_to=msg)


@server.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    random.seed(int(cfg["seed"]))
    np.random.seed(int(cfg["seed"]))
    strategy = DifferentialPrivacyClientSideFixedClipping(
        FedAvg(fraction_train=float(cfg["fraction-train"]), fraction_evaluate=0.0),
        noise_multiplier=float(cfg["noise-multiplier"]), clipping_norm=float(cfg["clipping-norm"]),
        num_sampled_clients=int(cfg["num-sampled-clients"]))
    strategy.start(grid=grid, initial_arrays=ArrayRecord([np.zeros(int(cfg["features"]), dtype=np.float32)]),
                   num_rounds=int(cfg["num-server-rounds"]))
