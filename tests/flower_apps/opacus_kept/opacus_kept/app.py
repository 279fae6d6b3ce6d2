"""Sample-level DP in the clients: each client trains a small PyTorch classifier with opacus (Poisson batches) and
keeps its accountant's history in its node state across rounds, so the epsilon it reports covers every round it
trained. The server runs plain FedAvg (Message API).

``noise-scale`` below 1 is a planted bug: the noise opacus generates is scaled by it behind the accountant's back.
"""

import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg
from opacus import PrivacyEngine
from opacus.optimizers import optimizer as opacus_optimizer

server = ServerApp()
client = ClientApp()
_generate_noise = opacus_optimizer._generate_noise


def make_model():
    return torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


def local_loader(partition: int):
    g = torch.Generator().manual_seed(4000 + partition)
    x = torch.randn(128, 20, generator=g)
    y = (x[:, 0] > 0).long()
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True)


@client.train()
def train(msg: Message, context: Context) -> Message:
    scale = float(context.run_config["noise-scale"])

    def scaled(std, *args, **kwargs):
        return _generate_noise(std * scale, *args, **kwargs)

    opacus_optimizer._generate_noise = _generate_noise if scale == 1.0 else scaled
    try:
        return _train(msg, context)
    finally:
        opacus_optimizer._generate_noise = _generate_noise


def _train(msg: Message, context: Context) -> Message:
    cfg = context.run_config
    model = make_model()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    engine = PrivacyEngine()
    saved = context.state.config_records.get("accountant")
    if saved is not None:  # the same accountant as the rounds before
        engine.accountant.history = list(zip(saved["z"], saved["q"], saved["n"], strict=True))
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), data_loader=local_loader(
            int(context.node_config["partition-id"])), noise_multiplier=float(cfg["noise-multiplier"]),
        max_grad_norm=float(cfg["max-grad-norm"]))
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    history = engine.accountant.history
    context.state["accountant"] = ConfigRecord({"z": [float(h[0]) for h in history],
                                                "q": [float(h[1]) for h in history],
                                                "n": [int(h[2]) for h in history]})
    epsilon = engine.get_epsilon(float(cfg["target-delta"]))
    metrics = MetricRecord({"num-examples": 128, "epsilon": float(epsilon)})
    return Message(RecordDict({"arrays": ArrayRecord(model._module.state_dict()), "metrics": metrics}), reply_to=msg)


@server.main()
def main(grid: Grid, context: Context) -> None:
    torch.manual_seed(0)  # the server's initial model only: a client must not reseed the generator opacus draws from
    strategy = FedAvg(fraction_evaluate=0.0)
    strategy.start(grid=grid, initial_arrays=ArrayRecord(make_model().state_dict()),
                   num_rounds=int(context.run_config["num-server-rounds"]))
