"""Federated linear regression in NumPy in Flower's legacy API with central DP and client-side clipping, as Flower's
documentation sets it up: a ``server_fn`` wrapping the legacy ``FedAvg`` in
``DifferentialPrivacyClientSideFixedClipping``, and a ``NumPyClient``. The ClientApp was written without
``fixedclipping_mod`` (Flower runs it all the same: the wrapper only sends the clip).
"""

import random

import numpy as np
from flwr.client import NumPyClient
from flwr.clientapp import ClientApp
from flwr.common import Context, ndarrays_to_parameters
from flwr.server import ServerApp, ServerAppComponents, ServerConfig
from flwr.server.strategy import DifferentialPrivacyClientSideFixedClipping, FedAvg


class RegressionClient(NumPyClient):
    def __init__(self, partition: int, features: int):
        rng = np.random.default_rng(900 + partition)
        self.x = rng.normal(size=(32, features))
        self.y = self.x @ np.linspace(-1, 1, features) + 0.1 * rng.normal(size=32)

    def fit(self, parameters, config):
        w = parameters[0].astype(np.float64)
        for _ in range(5):
            w = w - 0.05 * self.x.T @ (self.x @ w - self.y) / len(self.y)
        return [w.astype(np.float32)], len(self.y), {}


def client_fn(context: Context):
    partition, features = int(context.node_config["partition-id"]), int(context.run_config["features"])
    return RegressionClient(partition, features).to_client()


client = ClientApp(client_fn=client_fn)


def server_fn(context: Context) -> ServerAppComponents:
    cfg = context.run_config
    random.seed(int(cfg["seed"]))
    np.random.seed(int(cfg["seed"]))
    m = int(cfg["clients-per-round"])
    inner = FedAvg(fraction_fit=1e-9, min_fit_clients=m, min_available_clients=m, fraction_evaluate=0.0,
                   initial_parameters=ndarrays_to_parameters([np.zeros(int(cfg["features"]), dtype=np.float32)]))
    strategy = DifferentialPrivacyClientSideFixedClipping(inner, float(cfg["noise-multiplier"]),
                                                          float(cfg["clipping-norm"]), m)
    return ServerAppComponents(strategy=strategy, config=ServerConfig(num_rounds=int(cfg["num-server-rounds"])))


server = ServerApp(server_fn=server_fn)
