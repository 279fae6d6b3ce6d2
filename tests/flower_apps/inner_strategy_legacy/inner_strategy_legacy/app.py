"""Federated linear regression in NumPy, in Flower's legacy API: a ``server_fn`` returning ``ServerAppComponents``
with the legacy ``DifferentialPrivacyServerSideFixedClipping`` around the strategy the run config's ``strategy``
names, each with Flower's defaults (``MyAdam`` is a ``FedAdam`` of this app's own that keeps the norm of each
aggregate; ``FedProx`` needs its ``proximal_mu``: 0.1), and a ``NumPyClient``.

``eta`` sets the server optimizer's learning rate (0: Flower's default). Each node holds 64 examples of 20
features, half of which do not matter (their true weight is 0).
"""

import numpy as np
from flwr.client import NumPyClient
from flwr.clientapp import ClientApp
from flwr.common import Context, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.server import ServerApp, ServerAppComponents, ServerConfig
from flwr.server.strategy import (
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


class RegressionClient(NumPyClient):
    def __init__(self, partition: int):
        rng = np.random.default_rng(900 + partition)
        self.x = np.c_[rng.normal(size=(64, FEATURES)), np.ones(64)]
        self.y = self.x @ TRUE_WEIGHTS + 0.1 * rng.normal(size=64)

    def fit(self, parameters, config):
        w = parameters[0].astype(np.float64)
        for _ in range(5):
            w = w - 0.05 * self.x.T @ (self.x @ w - self.y) / len(self.y)
        return [w.astype(np.float32)], len(self.y), {}


def client_fn(context: Context):
    return RegressionClient(int(context.node_config["partition-id"])).to_client()


client = ClientApp(client_fn=client_fn)


class MyAdam(FedAdam):
    """FedAdam that keeps the norm of every model it returns."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.norms = []

    def aggregate_fit(self, server_round, results, failures):
        parameters, metrics = super().aggregate_fit(server_round, results, failures)
        if parameters is not None:
            self.norms.append(float(np.linalg.norm(parameters_to_ndarrays(parameters)[0])))
        return parameters, metrics


STRATEGIES = {"FedAvg": FedAvg, "FedProx": FedProx, "FedAdam": FedAdam, "FedYogi": FedYogi,
              "FedAdagrad": FedAdagrad, "FedAvgM": FedAvgM, "FedMedian": FedMedian,
              "FedTrimmedAvg": FedTrimmedAvg, "MyAdam": MyAdam}


def server_fn(context: Context) -> ServerAppComponents:
    cfg = context.run_config
    np.random.seed(int(cfg["seed"]))  # Flower's DP wrappers draw their noise from NumPy's global generator
    m = int(cfg["clients-per-round"])
    initial = ndarrays_to_parameters([np.zeros(FEATURES + 1, dtype=np.float32)])
    options = {"fraction_fit": 1e-9, "min_fit_clients": m, "min_available_clients": m, "fraction_evaluate": 0.0,
               "initial_parameters": initial}
    if cfg["strategy"] == "FedProx":
        options["proximal_mu"] = 0.1
    if float(cfg["eta"]) > 0:
        options["eta"] = float(cfg["eta"])
    if cfg["strategy"] == "FedAvgM":
        options.update(server_learning_rate=float(cfg["server-learning-rate"]),
                       server_momentum=float(cfg["server-momentum"]))
    inner = STRATEGIES[str(cfg["strategy"])](**options)
    strategy = DifferentialPrivacyServerSideFixedClipping(inner, float(cfg["noise-multiplier"]),
                                                          float(cfg["clipping-norm"]), m)
    return ServerAppComponents(strategy=strategy, config=ServerConfig(num_rounds=int(cfg["num-server-rounds"])))


server = ServerApp(server_fn=server_fn)
