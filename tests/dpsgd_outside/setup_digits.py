"""A DP-SGD training written the way an opacus user writes it, outside this repository's style: its own MLP,
scikit-learn's handwritten digits, plain torch and opacus (nothing of dpfed-audit inside).

``make_setup`` is the correct training (batch 64, noise multiplier 1, clip 1, 5 epochs, Poisson sampling);
the other functions plant one bug each behind opacus's accountant, which is still told the configured
numbers: ``make_setup_half_noise`` (half the noise), ``make_setup_no_clipping`` (per-sample gradients summed
unclipped), ``make_setup_param_outside`` (the last layer's bias trained by a plain SGD outside the private
optimizer), ``make_setup_realised_batch`` (the noisy sum divided by the realised batch size).
"""

import torch
from opacus import PrivacyEngine
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

BATCH, NOISE, CLIP, EPOCHS, LR = 64, 1.0, 1.0, 5, 0.5


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(64, 32)
        self.out = nn.Linear(32, 10)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))


def _data():
    x, y = load_digits(return_X_y=True)
    return TensorDataset(torch.tensor(x / 16.0, dtype=torch.float32), torch.tensor(y, dtype=torch.long))


def _private(model, params=None):
    torch.manual_seed(0)
    optimizer = torch.optim.SGD(params if params is not None else model.parameters(), lr=LR)
    engine = PrivacyEngine(accountant="prv")
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=DataLoader(_data(), batch_size=BATCH),
        noise_multiplier=NOISE, max_grad_norm=CLIP, poisson_sampling=True)
    return {"model": model, "optimizer": optimizer, "data_loader": loader, "privacy_engine": engine,
            "epochs": EPOCHS}


def make_setup():
    torch.manual_seed(0)
    return _private(MLP())


def make_setup_half_noise():
    setup = make_setup()
    optimizer = setup["optimizer"]
    add_noise = optimizer.add_noise

    def half_noise():  # the accountant's step hook still reads the configured multiplier afterwards
        optimizer.noise_multiplier = NOISE / 2
        try:
            add_noise()
        finally:
            optimizer.noise_multiplier = NOISE

    optimizer.add_noise = half_noise
    return setup


def make_setup_no_clipping():
    setup = make_setup()
    optimizer = setup["optimizer"]

    def sum_unclipped():
        for p in optimizer.params:
            p.summed_grad = p.grad_sample.sum(dim=0)

    optimizer.clip_and_accumulate = sum_unclipped
    return setup


def make_setup_param_outside():
    torch.manual_seed(0)
    model = MLP()
    private = [p for name, p in model.named_parameters() if name != "out.bias"]
    setup = _private(model, private)
    setup["plain_optimizer_for_bias"] = torch.optim.SGD([model.out.bias], lr=LR)  # trained without noise
    return {k: v for k, v in setup.items() if k != "plain_optimizer_for_bias"}


def make_setup_realised_batch():
    setup = make_setup()
    optimizer = setup["optimizer"]

    def by_realised_size():
        for p in optimizer.params:
            p.grad /= max(1, len(p.grad_sample))

    optimizer.scale_grad = by_realised_size
    return setup


def train(setup):
    """The training loop these set-ups are for (not called by the audit)."""
    model, optimizer = setup["model"], setup["optimizer"]
    for _ in range(setup["epochs"]):
        for x, y in setup["data_loader"]:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    return model
