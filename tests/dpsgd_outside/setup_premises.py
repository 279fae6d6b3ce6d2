"""Set-ups written as an opacus user writes them (an MLP on scikit-learn's digits; plain torch and opacus, nothing of
dpfed-audit inside), for the set-up form's premise checks.

``make_setup_run_longer``: ``make_private_with_epsilon(target_epsilon=3, epochs=1)``, then a loop of 2 epochs (the
claim of 3 is for half the steps that run). ``make_setup_head_plain``: the body made private, the head (a separate
module after it) trained by a second, plain optimizer. ``make_setup_head_in_module``: the whole model given to
``make_private`` but its optimizer over the body only, the head trained by a second, plain optimizer.
"""

import torch
from opacus import PrivacyEngine
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

BATCH, CLIP, LR, DELTA = 64, 1.0, 0.5, 1e-5


def _loader():
    x, y = load_digits(return_X_y=True)
    data = TensorDataset(torch.tensor(x / 16.0, dtype=torch.float32), torch.tensor(y, dtype=torch.long))
    return DataLoader(data, batch_size=BATCH)


def make_setup_run_longer():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    engine = PrivacyEngine()
    model, optimizer, loader = engine.make_private_with_epsilon(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=LR), data_loader=_loader(),
        target_epsilon=3.0, target_delta=DELTA, epochs=1, max_grad_norm=CLIP)
    return {"model": model, "optimizer": optimizer, "data_loader": loader, "privacy_engine": engine, "epochs": 2,
            "delta": DELTA}


def make_setup_head_plain():
    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(64, 32), nn.ReLU())
    head = nn.Linear(32, 10)
    engine = PrivacyEngine()
    body, optimizer, loader = engine.make_private(
        module=body, optimizer=torch.optim.SGD(body.parameters(), lr=LR), data_loader=_loader(),
        noise_multiplier=1.0, max_grad_norm=CLIP)
    model = nn.Sequential(body, head)
    head_optimizer = torch.optim.SGD(head.parameters(), lr=LR)  # noqa: F841 - the loop steps it after each batch
    return {"model": model, "optimizer": optimizer, "data_loader": loader, "privacy_engine": engine, "epochs": 1}


def make_setup_head_in_module():
    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(64, 32), nn.ReLU())
    head = nn.Linear(32, 10)
    model = nn.Sequential(body, head)
    engine = PrivacyEngine()
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(body.parameters(), lr=LR), data_loader=_loader(),
        noise_multiplier=1.0, max_grad_norm=CLIP)
    head_optimizer = torch.optim.SGD(head.parameters(), lr=LR)  # noqa: F841 - the loop steps it after each batch
    return {"model": model, "optimizer": optimizer, "data_loader": loader, "privacy_engine": engine, "epochs": 1}
