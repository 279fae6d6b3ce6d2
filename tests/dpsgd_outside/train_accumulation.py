"""A DP-SGD training with gradient accumulation, written the way an opacus user writes it (plain torch and opacus,
nothing of dpfed-audit inside): a small linear classifier on synthetic data, ``model.allow_grad_accumulation()``
after ``make_private`` and one ``optimizer.step()`` every ``ACCUMULATE`` Poisson batches, its epsilon printed at the
end from the engine.

``train``: 256 records in batches of 32 (sample rate 1/8), 4 batches per step, 2 epochs: 4 optimizer steps at noise
multiplier 1. Each step sums 4 independent Poisson batches at the same parameters, so a record can add its clipped
gradient up to 4 times to one noised sum; opacus accounts each step as one Poisson draw at rate 4/8.
``train_every_batch``: the same loop stepping after every batch (no accumulation), the control.
``train_two_losses``: one step per batch, but the task loss and a second loss (the same cross-entropy on the
inputs with a little noise added, a robustness term) backward'd one after the other: two passes on one batch, so a
record in the batch adds two clipped gradients to the step's noised sum.
"""

import torch
from opacus import PrivacyEngine
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

RECORDS, FEATURES, BATCH, ACCUMULATE, EPOCHS = 256, 10, 32, 4, 2
NOISE, CLIP, DELTA, LR = 1.0, 1.0, 1e-5, 0.1


def _data():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(RECORDS, FEATURES, generator=generator)
    y = (x[:, 0] + 0.5 * torch.randn(RECORDS, generator=generator) > 0).long()
    return TensorDataset(x, y)


def _train(accumulate: int, second_loss: bool = False):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, 8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    engine = PrivacyEngine()
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=DataLoader(_data(), batch_size=BATCH, shuffle=True),
        noise_multiplier=NOISE, max_grad_norm=CLIP)
    model.allow_grad_accumulation()
    criterion = nn.CrossEntropyLoss()
    for epoch in range(EPOCHS):
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            loss.backward()
            if second_loss:  # a robustness term: the same loss on slightly perturbed inputs
                criterion(model(x + 0.1 * torch.randn_like(x)), y).backward()
            if (i + 1) % accumulate == 0:  # one step per `accumulate` batches
                optimizer.step()
                optimizer.zero_grad()
        print(f"epoch {epoch + 1}: loss {loss.item():.3f}")
    print(f"epsilon {engine.get_epsilon(DELTA):.2f} at delta {DELTA}")


def train():
    _train(ACCUMULATE)


def train_every_batch():
    _train(1)


def train_two_losses():
    _train(1, second_loss=True)
