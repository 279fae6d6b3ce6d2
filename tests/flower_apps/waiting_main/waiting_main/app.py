"""Federated linear regression (NumPy) whose ServerApp waits for its SuperNodes before it builds its strategy.

The main asks the grid for the connected nodes, samples all of them each round and tells Flower's server-side
fixed-clipping DP wrapper that sample size. ``noise-scale`` below 1 is a planted bug: the wrapper then adds that
fraction of the noise it reports.
"""

import time

import numpy as np
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg

DIM = 40
server = ServerApp()
client = ClientApp()


def local_data(partition: int):
    rng = np.random.default_rng(1000 + partition)
    x = rng.normal(size=(64, DIM))
    return x, x @ np.linspace(-1, 1, DIM) + 0.1 * rng.normal(size=64)


@client.train()
def train(msg: Message, context: Context) -> Message:
    w = msg.content["arrays"].to_numpy_ndarrays()[0].astype(np.float64)
    x, y = local_data(int(context.node_config["partition-id"]))
    for _ in range(5):
        w = w - 0.05 * x.T @ (x @ w - y) / len(y)
    return Message(RecordDict({"arrays": ArrayRecord([w.astype(np.float32)]),
                               "metrics": MetricRecord({"num-examples": len(y)})}), reply_to=msg)


class ScaledNoiseWrapper(DifferentialPrivacyServerSideFixedClipping):
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
    nodes = list(grid.get_node_ids())
    while not nodes:  # wait for the SuperNodes to connect
        time.sleep(0.5)
        nodes = list(grid.get_node_ids())
    cfg = context.run_config
    inner = FedAvg(fraction_train=1.0, min_train_nodes=len(nodes), min_available_nodes=len(nodes),
                   fraction_evaluate=0.0)
    strategy = ScaledNoiseWrapper(inner, float(cfg["noise-multiplier"]), float(cfg["clipping-norm"]), len(nodes))
    strategy.noise_scale = float(cfg["noise-scale"])
    strategy.start(grid=grid, initial_arrays=ArrayRecord([np.zeros(DIM, dtype=np.float32)]),
                   num_rounds=int(cfg["num-server-rounds"]))
