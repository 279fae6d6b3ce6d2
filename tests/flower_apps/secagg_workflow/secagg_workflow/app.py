"""Federated linear regression (NumPy) under central DP with secure aggregation: the ServerApp runs the legacy
``FedAvg`` inside ``DifferentialPrivacyClientSideFixedClipping`` through ``LegacyContext`` + ``DefaultWorkflow``
with ``SecAggPlusWorkflow``; the clients run ``secaggplus_mod`` and ``fixedclipping_mod``.

``noise-scale`` below 1 is a planted bug: the wrapper then adds that fraction of the noise it reports.
"""

import numpy as np
from flwr.client import NumPyClient
from flwr.client.mod import fixedclipping_mod, secaggplus_mod
from flwr.clientapp import ClientApp
from flwr.common import Context, ndarrays_to_parameters
from flwr.server import Grid, LegacyContext, ServerApp, ServerConfig
from flwr.server.strategy import DifferentialPrivacyClientSideFixedClipping, FedAvg
from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow

DIM = 40


class RegressionClient(NumPyClient):
    def __init__(self, partition: int):
        rng = np.random.default_rng(3000 + partition)
        self.x = rng.normal(size=(64, DIM))
        self.y = self.x @ np.linspace(-1, 1, DIM) + 0.1 * rng.normal(size=64)

    def fit(self, parameters, config):
        w = parameters[0].astype(np.float64)
        for _ in range(5):
            w = w - 0.05 * self.x.T @ (self.x @ w - self.y) / len(self.y)
        return [w.astype(np.float32)], len(self.y), {}


def client_fn(context: Context):
    return RegressionClient(int(context.node_config["partition-id"])).to_client()


client = ClientApp(client_fn=client_fn, mods=[secaggplus_mod, fixedclipping_mod])


class ScaledNoiseWrapper(DifferentialPrivacyClientSideFixedClipping):
    noise_scale = 1.0

    def aggregate_fit(self, server_round, results, failures):
        configured = self.noise_multiplier
        self.noise_multiplier = configured * self.noise_scale
        try:
            return super().aggregate_fit(server_round, results, failures)
        finally:
            self.noise_multiplier = configured


server = ServerApp()


@server.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    m = int(cfg["clients-per-round"])
    inner = FedAvg(fraction_fit=1e-9, min_fit_clients=m, min_available_clients=m, fraction_evaluate=0.0,
                   initial_parameters=ndarrays_to_parameters([np.zeros(DIM, dtype=np.float32)]))
    strategy = ScaledNoiseWrapper(inner, float(cfg["noise-multiplier"]), float(cfg["clipping-norm"]), m)
    strategy.noise_scale = float(cfg["noise-scale"])
    context = LegacyContext(context=context, config=ServerConfig(num_rounds=int(cfg["num-server-rounds"])),
                            strategy=strategy)
    workflow = DefaultWorkflow(fit_workflow=SecAggPlusWorkflow(num_shares=3, reconstruction_threshold=2))
    workflow(grid, context)
