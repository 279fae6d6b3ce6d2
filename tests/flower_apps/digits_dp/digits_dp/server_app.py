"""The ServerApp: FedAvg over a fixed number of clients a round, under one of Flower's central-DP wrappers."""

import random

import numpy as np
from flwr.app import ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import (
    DifferentialPrivacyClientSideFixedClipping,
    DifferentialPrivacyServerSideAdaptiveClipping,
    DifferentialPrivacyServerSideFixedClipping,
    FedAvg,
)

from digits_dp.task import initial_weights

app = ServerApp()


class FixedCountFedAvg(FedAvg):
    """FedAvg that trains exactly ``per_round`` clients a round (Flower samples max(int(N * fraction),
    min_train_nodes) of the N connected nodes: a tiny fraction leaves the minimum) and evaluates none."""

    def __init__(self, per_round: int):
        super().__init__(fraction_train=1e-9, min_train_nodes=per_round, min_available_nodes=per_round,
                         fraction_evaluate=0.0, min_evaluate_nodes=0)


class ScaledNoise:
    """Mixin: the noise added is the configured one times ``noise_scale``."""

    noise_scale = 1.0

    def _add_noise_to_aggregated_arrays(self, aggregated):
        configured = self.noise_multiplier
        self.noise_multiplier = configured * self.noise_scale
        try:
            return super()._add_noise_to_aggregated_arrays(aggregated)
        finally:
            self.noise_multiplier = configured


def dp_strategy(cfg) -> object:
    z, clip, m = float(cfg["noise-multiplier"]), float(cfg["clipping-norm"]), int(cfg["clients-per-round"])
    inner = FixedCountFedAvg(m)
    if cfg["clipping"] == "server-fixed":
        base, args = DifferentialPrivacyServerSideFixedClipping, (inner, z, clip, m)
    elif cfg["clipping"] == "client-fixed":
        base, args = DifferentialPrivacyClientSideFixedClipping, (inner, z, clip, m)
    elif cfg["clipping"] == "server-adaptive":
        base, args = DifferentialPrivacyServerSideAdaptiveClipping, (inner, z, m)
    else:
        raise ValueError(f"unknown clipping {cfg['clipping']!r}")
    cls = type(f"Scaled{base.__name__}", (ScaledNoise, base), {"noise_scale": float(cfg["noise-scale"])})
    if cfg["clipping"] == "server-adaptive":
        return cls(*args, initial_clipping_norm=clip, clipped_count_stddev=float(cfg["clipped-count-stddev"]))
    return cls(*args)


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    random.seed(int(cfg["seed"]))
    np.random.seed(int(cfg["seed"]))
    strategy = dp_strategy(cfg)
    result = strategy.start(grid=grid, initial_arrays=ArrayRecord(initial_weights(int(cfg["seed"]))),
                            num_rounds=int(cfg["num-server-rounds"]))
    print(f"digits-dp: trained {int(cfg['num-server-rounds'])} rounds; final model has "
          f"{sum(a.size for a in result.arrays.to_numpy_ndarrays())} parameters")
