"""FedAvg with no DP wrapper: nothing for the audit to account."""

import numpy as np
from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import ServerApp
from flwr.serverapp.strategy import FedAvg

server = ServerApp()
client = ClientApp()


@client.train()
def train(msg, context):
    arrays = msg.content["arrays"].to_numpy_ndarrays()
    return Message(RecordDict({"arrays": ArrayRecord([a + 0.1 for a in arrays]),
                               "metrics": MetricRecord({"num-examples": 1})}), reply_to=msg)


@server.main()
def main(grid, context):
    rounds = int(context.run_config["num-server-rounds"])
    FedAvg(fraction_evaluate=0.0).start(grid=grid, initial_arrays=ArrayRecord([np.zeros(3)]), num_rounds=rounds)
