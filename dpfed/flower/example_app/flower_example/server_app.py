"""The example's ServerApp: FedAvg training ``clients-per-round`` clients a round, in Flower's
DifferentialPrivacyServerSideFixedClipping (or, with a planted bug, a subclass that adds the wrong noise while
keeping the configuration the same)."""

import random

import numpy as np
import torch
from flwr.app import ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg

from flower_example.task import BUG_NOISE_FACTOR, BUG_ROUND, model_for

app = ServerApp()


class PlantedNoiseBug(DifferentialPrivacyServerSideFixedClipping):
    """``noise-cut``: BUG_NOISE_FACTOR times the noise; ``skip-round``: none on round BUG_ROUND."""

    bug = "none"

    def aggregate_train(self, server_round, replies):
        self._round = server_round
        return super().aggregate_train(server_round, replies)

    def _add_noise_to_aggregated_arrays(self, aggregated):
        if self.bug == "skip-round" and self._round == BUG_ROUND:
            return aggregated
        configured = self.noise_multiplier
        self.noise_multiplier = configured * (BUG_NOISE_FACTOR if self.bug == "noise-cut" else 1.0)
        try:
            return super()._add_noise_to_aggregated_arrays(aggregated)
        finally:
            self.noise_multiplier = configured


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    seed, m = int(cfg["seed"]), int(cfg["clients-per-round"])
    random.seed(seed)  # Flower samples with Python's global generator
    np.random.seed(seed)  # and its DP wrappers draw the noise from NumPy's global one
    torch.manual_seed(seed)
    # Flower trains max(int(N * fraction_train), min_train_nodes) of N nodes: a tiny fraction leaves exactly m
    fedavg = FedAvg(fraction_train=1e-9, min_train_nodes=m, min_available_nodes=m, fraction_evaluate=0.0,
                    min_evaluate_nodes=0)
    wrapper = DifferentialPrivacyServerSideFixedClipping
    if cfg["bug"] in ("noise-cut", "skip-round"):
        wrapper = type("Planted", (PlantedNoiseBug,), {"bug": cfg["bug"]})
    elif cfg["bug"] not in ("none", "unequal-weights"):
        raise ValueError(f"unknown bug {cfg['bug']!r}: none, noise-cut, skip-round or unequal-weights")
    strategy = wrapper(fedavg, float(cfg["noise-multiplier"]), float(cfg["clipping-norm"]), m)
    strategy.start(grid=grid, initial_arrays=ArrayRecord(model_for(int(cfg["hidden"])).state_dict()),
                   num_rounds=int(cfg["num-server-rounds"]))
