"""Federated linear regression (NumPy) in Flower's legacy API: a ``server_fn`` returning ``ServerAppComponents``
with the legacy ``FedAvg`` inside ``DifferentialPrivacyServerSideFixedClipping``, and a ``NumPyClient``.

``noise-scale`` below 1 is a planted bug: the wrapper then adds that fraction of the noise it reports.
"""

import numpy as np
from flwr.client import NumPyClient
from flwr.clientapp import ClientApp
from flwr.common import Context, ndarrays_to_parameters
from flwr.server import ServerApp, ServerAppComponents, ServerConfig
from flwr.server.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg

DIM = 40


class RegressionClient(NumPyClient):
    def __init__(self, partition: int):
        rng = np.random.default_rng(2000 + partition)
        self.x = rng.normal(size=(64, DIM))
        self.y = self.x @ np.linspace(-1, 1, DIM) + 0.1 * rng.normal(size=64)

    def fit(self, parameters, config):
        w = parameters[0].astype(np.float64)
        for _ in range(5):
            w = w - 0.05 * self.x.T @ (self.x @ w - self.y) / len(self.y)
        return [w.astype(np.float32)], len(self.y), {}


def client_fn(context: Context):
    return RegressionClient(int(context.node_config["partition-id"])).to_client()


client = ClientApp(client_fn=client_fn)


class ScaledNoiseWrapper(DifferentialPrivacyServerSideFixedClipping):
    noise_scale = 1.0

    def aggregate_fit(self, server_round, results, failures):
        configured = self.noise_multiplier
        self.noise_multiplier = configured * self.noise_scale
        try:
            return super().aggregate_fit(server_round, results, failures)
        finally:
            self.noise_multiplier = configured


def server_fn(context: Context) -> ServerAppComponents:
    cfg = context.run_config
    m = int(cfg["clients-per-round"])
    inner = FedAvg(fraction_fit=1e-9, min_fit_clients=m, min_available_clients=m, fraction_evaluate=0.0,
                   initial_parameters=ndarrays_to_parameters([np.zeros(DIM, dtype=np.float32)]))
    strategy = ScaledNoiseWrapper(inner, float(cfg["noise-multiplier"]), float(cfg["clipping-norm"]), m)
    strategy.noise_scale = float(cfg["noise-scale"])
    return ServerAppComponents(strategy=strategy, config=ServerConfig(num_rounds=int(cfg["num-server-rounds"])))


server = ServerApp(server_fn=server_fn)
