"""The example's ClientApp: local training on this node's shard; reports 1 example (equal FedAvg weights) unless
the run plants the ``unequal-weights`` bug."""

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from flower_example.task import client_shard, local_train, model_for

app = ClientApp()


@app.train()
def train(msg: Message, context: Context) -> Message:
    cfg = context.run_config
    unequal = cfg["bug"] == "unequal-weights"
    shard = client_shard(int(context.node_config["partition-id"]), int(context.node_config["num-partitions"]),
                         int(cfg["seed"]), unequal)
    state = local_train(model_for(int(cfg["hidden"])), msg.content["arrays"].to_torch_state_dict(), shard,
                        int(cfg["local-steps"]), float(cfg["learning-rate"]))
    metrics = MetricRecord({"num-examples": len(shard[1]) if unequal else 1})
    return Message(content=RecordDict({"arrays": ArrayRecord(state), "metrics": metrics}), reply_to=msg)
