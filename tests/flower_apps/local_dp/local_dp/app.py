"""Federated linear regression (NumPy) with local DP: each client's update is clipped and noised by Flower's
``LocalDpMod`` before it leaves the client; the server averages (legacy ``FedAvg`` through ``server_fn``).

The mod states a per-release (local-epsilon, local-delta); each client releases once per round it trains.
``sensitivity`` below ``clipping-norm`` is the planted bug: the noise is then scaled for a smaller sensitivity
than the clipped update has.
"""

import numpy as np
from flwr.client import NumPyClient
from flwr.client.mod import LocalDpMod
from flwr.clientapp import ClientApp
from flwr.common import Context, ndarrays_to_parameters
from flwr.server import ServerApp, ServerAppComponents, ServerConfig
from flwr.server.strategy import FedAvg

DIM = 40
# the project's defaults ([tool.flwr.app.config]); a ClientApp's mods are built when it is imported
CLIP, SENSITIVITY, EPSILON, DELTA = 1.0, 2.0, 2.0, 1e-5


class RegressionClient(NumPyClient):
    def __init__(self, partition: int):
        rng = np.random.default_rng(5000 + partition)
        self.x = rng.normal(size=(64, DIM))
        self.y = self.x @ np.linspace(-1, 1, DIM) + 0.1 * rng.normal(size=64)

    def fit(self, parameters, config):
        w = parameters[0].astype(np.float64)
        for _ in range(5):
            w = w - 0.05 * self.x.T @ (self.x @ w - self.y) / len(self.y)
        return [w.astype(np.float32)], len(self.y), {}


def client_fn(context: Context):
    return RegressionClient(int(context.node_config["partition-id"])).to_client()


def make_client(clip=CLIP, sensitivity=SENSITIVITY, epsilon=EPSILON, delta=DELTA) -> ClientApp:
    return ClientApp(client_fn=client_fn, mods=[LocalDpMod(clip, sensitivity, epsilon, delta)])


client = make_client()
half_sensitivity_client = make_client(sensitivity=0.5)  # the planted bug: noise scaled for half the clip


def server_fn(context: Context) -> ServerAppComponents:
    cfg = context.run_config
    m = int(cfg["clients-per-round"])
    strategy = FedAvg(fraction_fit=1e-9, min_fit_clients=m, min_available_clients=m, fraction_evaluate=0.0,
                      initial_parameters=ndarrays_to_parameters([np.zeros(DIM, dtype=np.float32)]))
    return ServerAppComponents(strategy=strategy, config=ServerConfig(num_rounds=int(cfg["num-server-rounds"])))


server = ServerApp(server_fn=server_fn)
