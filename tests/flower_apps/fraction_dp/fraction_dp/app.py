"""Federated linear regression in NumPy: FedAvg trains a fraction of the connected nodes each round, in a subclass
of Flower's ``DifferentialPrivacyServerSideFixedClipping`` told ``num-sampled-clients`` (the user's own figure).

Every client holds 64 examples (equal FedAvg weights). ``noise-scale`` below 1 is a planted bug: the wrapper then
adds that fraction of the noise it reports.
"""

import random

import numpy as np
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg

server = ServerApp()
client = ClientApp()


def local_data(partition: int, features: int):
    rng = np.random.default_rng(500 + partition)
    x = np.c_[rng.normal(size=(64, features)), np.ones(64)]
    return x, x @ np.linspace(-1, 1, features + 1) + 0.1 * rng.normal(size=64)


@client.train()
def train(msg: Message, context: Context) -> Message:
    w = msg.content["arrays"].to_numpy_ndarrays()[0].astype(np.float64)
    x, y = local_data(int(context.node_config["partition-id"]), int(context.run_config["features"]))
    for _ in range(5):
        w = w - 0.05 * x.T @ (x @ w - y) / len(y)
    return Message(RecordDict({"arrays": ArrayRecord([w.astype(np.float32)]),
                               "metrics": MetricRecord({"num-examples": len(y)})}), reply_to=msg)


class MyDP(DifferentialPrivacyServerSideFixedClipping):
    noise_scale = 1.0

    def _add_noise_to_aggregated_arrays(self, aggregated):
        configured = self.noise_multiplier
        self.noise_multiplier = configured * self.noise_scale
        try:
            return super()._add_noise_to_aggregated_arrays(aggregated)
        finally:
            self.noise_multiplier = configured


@server.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    random.seed(int(cfg["seed"]))  # Flower samples with Python's global generator
    np.random.seed(int(cfg["seed"]))  # and its DP wrappers draw the noise from NumPy's global one
    inner = FedAvg(fraction_train=float(cfg["fraction-train"]), min_train_nodes=int(cfg["min-train-nodes"]),
                   min_available_nodes=int(cfg["min-available-nodes"]), fraction_evaluate=0.0)
    strategy = MyDP(inner, float(cfg["noise-multiplier"]), float(cfg["clipping-norm"]),
                    int(cfg["num-sampled-clients"]))
    strategy.noise_scale = float(cfg["noise-scale"])
    strategy.start(grid=grid, initial_arrays=ArrayRecord([np.zeros(int(cfg["features"]) + 1, dtype=np.float32)]),
                   num_rounds=int(cfg["num-server-rounds"]))
