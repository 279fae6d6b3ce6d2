"""Federated linear regression in NumPy with central DP (FedAvg in ``DifferentialPrivacyServerSideFixedClipping``)
whose ServerApp stops once a round is reached: its ``evaluate_fn`` raises and the main catches it, or (Flower 1.43)
``Strategy.start``'s ``should_stop`` ends the loop. With ``finetune-rounds`` above 0 it then starts a second DP
strategy from the model reached, for that many rounds.
"""

import random

import numpy as np
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg

server = ServerApp()
client = ClientApp()


class GoodEnough(Exception):
    """Raised by the central evaluation once the model is good enough."""


def local_data(partition: int, features: int):
    rng = np.random.default_rng(300 + partition)
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
    m, stop_after = int(cfg["num-sampled-clients"]), int(cfg["stop-after-round"])
    strategy = DifferentialPrivacyServerSideFixedClipping(
        FedAvg(fraction_train=1e-9, min_train_nodes=m, fraction_evaluate=0.0),
        noise_multiplier=float(cfg["noise-multiplier"]), clipping_norm=float(cfg["clipping-norm"]),
        num_sampled_clients=m)
    start = {"grid": grid, "initial_arrays": ArrayRecord([np.zeros(int(cfg["features"]), dtype=np.float32)]),
             "num_rounds": int(cfg["num-server-rounds"])}
    reached = {}

    def evaluate(server_round: int, arrays: ArrayRecord) -> MetricRecord:
        reached["arrays"] = arrays
        if server_round == stop_after and cfg["stop-with"] == "exception":
            raise GoodEnough(server_round)
        return MetricRecord({"round": server_round})

    try:
        if cfg["stop-with"] == "should-stop":
            strategy.start(**start, evaluate_fn=evaluate,
                           should_stop=lambda server_round, result: server_round == stop_after)
        else:
            strategy.start(**start, evaluate_fn=evaluate)
    except GoodEnough:
        pass
    if int(cfg["finetune-rounds"]) > 0:
        finetune = DifferentialPrivacyServerSideFixedClipping(
            FedAvg(fraction_train=1e-9, min_train_nodes=m, fraction_evaluate=0.0),
            noise_multiplier=float(cfg["noise-multiplier"]), clipping_norm=float(cfg["clipping-norm"]),
            num_sampled_clients=m)
        finetune.start(grid=grid, initial_arrays=reached["arrays"], num_rounds=int(cfg["finetune-rounds"]))
