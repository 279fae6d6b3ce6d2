"""FedAvg with no DP wrapper: nothing for the audit to account."""

import numpy as np
from flwr.app import ArrayRecord
from flwr.clientapp import ClientApp
from flwr.serverapp import ServerApp
from flwr.serverapp.strategy import FedAvg

server = ServerApp()
client = ClientApp()


@server.main()
def main(grid, context):
    rounds = int(context.run_config["num-server-rounds"])
    FedAvg().start(grid=grid, initial_arrays=ArrayRecord([np.zeros(3)]), num_rounds=rounds)
