"""Trainings that step a plain optimizer before ``make_private``, written as an opacus user writes them (an MLP on
synthetic records; plain torch and opacus, nothing of dpfed-audit inside). Each prints the epsilon its engine
reports.

Correct (post-processing of public data): ``train_public_pretraining`` (an epoch of plain SGD on a separate public
data set, then a fresh optimizer made private) and ``train_public_pretraining_same_optimizer`` (the public epoch
taken by the very optimizer then made private). Planted bugs (a non-private step on the private records):
``train_private_warmup`` (a warm-up epoch of plain SGD on the private data set's own loader, by a separate
optimizer), ``train_private_warmup_same_optimizer`` (by the optimizer then made private) and
``train_private_warmup_tensors`` (the warm-up reads the private tensors directly, batch by batch, no loader).
"""

import torch
from opacus import PrivacyEngine
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

RECORDS, FEATURES, CLASSES, BATCH, EPOCHS, LR, DELTA = 256, 16, 4, 32, 2, 0.1, 1e-5


def _records(seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(RECORDS, FEATURES, generator=generator)
    return x, (x[:, :CLASSES].argmax(dim=1))


def _plain_epoch(model, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


def _train(warmup):
    torch.manual_seed(0)
    private_x, private_y = _records(seed=1)
    private_data = TensorDataset(private_x, private_y)
    model = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, CLASSES))
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)

    if warmup == "public":
        public_data = TensorDataset(*_records(seed=2))
        _plain_epoch(model, torch.optim.SGD(model.parameters(), lr=LR), DataLoader(public_data, batch_size=BATCH))
    elif warmup == "public, same optimizer":
        _plain_epoch(model, optimizer, DataLoader(TensorDataset(*_records(seed=2)), batch_size=BATCH))
    elif warmup == "private":
        _plain_epoch(model, torch.optim.SGD(model.parameters(), lr=LR), DataLoader(private_data, batch_size=BATCH))
    elif warmup == "private, same optimizer":
        _plain_epoch(model, optimizer, DataLoader(private_data, batch_size=BATCH, shuffle=True))
    elif warmup == "private tensors":
        plain = torch.optim.SGD(model.parameters(), lr=LR)
        for start in range(0, RECORDS, BATCH):
            plain.zero_grad()
            x, y = private_x[start:start + BATCH], private_y[start:start + BATCH]
            nn.functional.cross_entropy(model(x), y).backward()
            plain.step()

    privacy_engine = PrivacyEngine()
    model, optimizer, train_loader = privacy_engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=DataLoader(private_data, batch_size=BATCH),
        noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    for _ in range(EPOCHS):
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    print(f"epsilon {privacy_engine.get_epsilon(DELTA):.3f} at delta {DELTA}")


def train_public_pretraining():
    _train("public")


def train_public_pretraining_same_optimizer():
    _train("public, same optimizer")


def train_private_warmup():
    _train("private")


def train_private_warmup_same_optimizer():
    _train("private, same optimizer")


def train_private_warmup_tensors():
    _train("private tensors")
