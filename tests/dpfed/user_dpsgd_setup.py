"""A user's own DP-SGD set-up for the pluggability tests: a small MLP on scikit-learn's digits (0 vs 1)."""

from __future__ import annotations

import torch
from torch import nn

from dpfed.dpsgd import DpsgdSetup


def digits_mlp_setup() -> DpsgdSetup:
    from sklearn.datasets import load_digits

    features, labels = load_digits(n_class=2, return_X_y=True)
    x = torch.as_tensor(features / 16.0, dtype=torch.float32)
    y = torch.as_tensor(labels, dtype=torch.long)

    def model():
        return nn.Sequential(nn.Linear(64, 8), nn.ReLU(), nn.Linear(8, 2))

    def loss(outputs, targets):
        return nn.functional.cross_entropy(outputs, targets, reduction="none")

    return DpsgdSetup(model, x, y, loss, sample_rate=0.25, noise_multiplier=1.5, epochs=1, name="digits MLP")
