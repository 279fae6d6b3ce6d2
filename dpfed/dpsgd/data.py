"""The bundled example: scikit-learn's breast-cancer data (ships with scikit-learn, no download) for a
logistic regression, standardised on the training split."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def breast_cancer_arrays(train_fraction: float = 0.8, seed: int = 0):
    """(train features, train labels, test features, test labels), float32, standardised by the training
    split's mean and standard deviation; the split is a fixed permutation drawn from ``seed``."""
    from sklearn.datasets import load_breast_cancer

    features, labels = load_breast_cancer(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = int(round(train_fraction * len(labels)))
    train, test = order[:cut], order[cut:]
    mean, std = features[train].mean(axis=0), features[train].std(axis=0)
    scaled = (features - mean) / np.where(std > 0, std, 1.0)
    as_tensor = lambda a: torch.as_tensor(a, dtype=torch.float32)  # noqa: E731
    return as_tensor(scaled[train]), as_tensor(labels[train]), as_tensor(scaled[test]), as_tensor(labels[test])


def logistic_regression(dim: int) -> nn.Module:
    """A logistic-regression model: one linear layer with a bias, one logit per example."""
    return nn.Linear(dim, 1)


def binary_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-example logistic loss of (B, 1) logits against (B,) labels in {0, 1}."""
    return nn.functional.binary_cross_entropy_with_logits(logits[:, 0], labels, reduction="none")
