"""The ClientApp: local softmax-regression training on this node's partition."""

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.clientapp.mod import fixedclipping_mod

from digits_dp.task import accuracy, load_partition, train


def clipping_mod(msg: Message, context: Context, call_next):
    """Clip on the client when the run clips client-side (Flower's fixedclipping_mod)."""
    if context.run_config["clipping"] == "client-fixed":
        return fixedclipping_mod(msg, context, call_next)
    return call_next(msg, context)


app = ClientApp(mods=[clipping_mod])


def my_data(context: Context):
    return load_partition(int(context.node_config["partition-id"]), int(context.node_config["num-partitions"]),
                          int(context.run_config["seed"]))


@app.train()
def train_fn(msg: Message, context: Context) -> Message:
    x, y = my_data(context)
    weights = train(msg.content["arrays"].to_numpy_ndarrays(), x, y, int(context.run_config["local-epochs"]),
                    float(context.run_config["learning-rate"]))
    metrics = MetricRecord({"num-examples": len(y), "train-accuracy": accuracy(weights, x, y)})
    return Message(content=RecordDict({"arrays": ArrayRecord(weights), "metrics": metrics}), reply_to=msg)


@app.evaluate()
def evaluate_fn(msg: Message, context: Context) -> Message:
    x, y = my_data(context)
    weights = msg.content["arrays"].to_numpy_ndarrays()
    metrics = MetricRecord({"num-examples": len(y), "accuracy": accuracy(weights, x, y)})
    return Message(content=RecordDict({"metrics": metrics}), reply_to=msg)
