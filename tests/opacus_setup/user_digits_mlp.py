"""An opacus set-up written the way an outside user would (issue 31): a one-hidden-layer MLP on scikit-learn's
digits (1797 records, 64 features), DP-SGD with batch 64, z = 1, C = 1. Nothing here imports this repository.

- ``make_setup``: correct (opacus's Poisson DPDataLoader).
- ``make_batch_memory_manager_setup``: correct, logical batches of 256 (opacus's Poisson sampler) split into
  physical batches of at most 64 by opacus's ``BatchMemoryManager``; the loader returned is the one the loop
  iterates.
- ``make_bias_outside_setup``: the last layer's bias is left out of the optimizer given to ``make_private``
  and trained by a second, plain SGD (no clipping, no noise).
- ``make_calibrated_5_runs_15_setup``: noise calibrated by ``make_private_with_epsilon`` for 5 epochs, the
  loop runs 15, and the user does not say what the accountant was told.
- ``make_batchnorm_setup``: a model with BatchNorm1d (opacus refuses it).
- ``make_setup_with_argument``: a set-up function that takes an argument.
- ``make_each_person_twice_setup``: every record appears twice (one person, two identical rows).
- ``make_frozen_hidden_layer_setup``: correct, the hidden layer frozen and outside the optimizer.
"""

import warnings

import numpy as np
import torch
from opacus import PrivacyEngine
from opacus.utils.batch_memory_manager import BatchMemoryManager
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

DELTA = 1e-5


class MLP(nn.Module):
    def __init__(self, batchnorm=False):
        super().__init__()
        self.hidden = nn.Linear(64, 32)
        self.norm = nn.BatchNorm1d(32) if batchnorm else nn.Identity()
        self.out = nn.Linear(32, 10)

    def forward(self, x):
        return self.out(torch.relu(self.norm(self.hidden(x))))


def digits(repeat=1):
    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    x, y = np.repeat(x, repeat, axis=0), np.repeat(y, repeat)
    return TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(y))


def _engine():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivacyEngine(accountant="rdp")


def make_setup(batch_size=64, repeat=1):
    torch.manual_seed(0)
    model = MLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    engine = _engine()
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=DataLoader(digits(repeat), batch_size=batch_size),
        noise_multiplier=1.0, max_grad_norm=1.0)
    return {"model": model, "optimizer": optimizer, "data_loader": loader, "privacy_engine": engine,
            "epochs": 2, "delta": DELTA}


def make_batch_memory_manager_setup():
    setup = make_setup(batch_size=256)
    # the training loop would be: with BatchMemoryManager(...) as loader: for x, y in loader: ...
    with BatchMemoryManager(data_loader=setup["data_loader"], max_physical_batch_size=64,
                            optimizer=setup["optimizer"]) as memory_safe_loader:
        setup["data_loader"] = memory_safe_loader
    return setup


def make_bias_outside_setup():
    torch.manual_seed(0)
    model = MLP()
    private_params = [p for name, p in model.named_parameters() if name != "out.bias"]
    optimizer = torch.optim.SGD(private_params, lr=0.1)
    engine = _engine()
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=DataLoader(digits(), batch_size=64),
        noise_multiplier=1.0, max_grad_norm=1.0)
    bias_optimizer = torch.optim.SGD([model._module.out.bias], lr=0.1)  # the loop steps both  # noqa: F841
    return {"model": model, "optimizer": optimizer, "data_loader": loader, "privacy_engine": engine,
            "epochs": 2, "delta": DELTA}


def make_calibrated_5_runs_15_setup():
    torch.manual_seed(0)
    model = MLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    engine = _engine()
    model, optimizer, loader = engine.make_private_with_epsilon(
        module=model, optimizer=optimizer, data_loader=DataLoader(digits(), batch_size=64),
        target_epsilon=4.0, target_delta=DELTA, epochs=5, max_grad_norm=1.0)
    return {"model": model, "optimizer": optimizer, "data_loader": loader, "privacy_engine": engine,
            "epochs": 15, "delta": DELTA}


def make_batchnorm_setup():
    torch.manual_seed(0)
    model = MLP(batchnorm=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    engine = _engine()
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=DataLoader(digits(), batch_size=64),
        noise_multiplier=1.0, max_grad_norm=1.0)
    return {"model": model, "optimizer": optimizer, "data_loader": loader, "privacy_engine": engine,
            "epochs": 2, "delta": DELTA}


def make_setup_with_argument(epochs):
    return {**make_setup(), "epochs": epochs}


def make_each_person_twice_setup():
    return make_setup(repeat=2)


def make_frozen_hidden_layer_setup():
    """Correct: the hidden layer is frozen (requires_grad off) and left out of the optimizer."""
    torch.manual_seed(0)
    model = MLP()
    model.hidden.requires_grad_(False)
    optimizer = torch.optim.SGD(model.out.parameters(), lr=0.1)
    engine = _engine()
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=DataLoader(digits(), batch_size=64),
        noise_multiplier=1.0, max_grad_norm=1.0)
    return {"model": model, "optimizer": optimizer, "data_loader": loader, "privacy_engine": engine,
            "epochs": 2, "delta": DELTA}
