"""Model, data and local training of the example: PyTorch on scikit-learn's digits, split over the clients."""

import numpy as np
import torch
from sklearn.datasets import load_digits

FEATURES, CLASSES = 64, 10
BUG_NOISE_FACTOR = 0.5  # noise-cut: the wrapper adds this times the std it should
BUG_ROUND = 2  # skip-round: no noise on this round


def model_for(hidden: int) -> torch.nn.Module:
    """Logistic regression (64 inputs, 10 classes), or an MLP with ``hidden`` ReLU units."""
    if not hidden:
        return torch.nn.Linear(FEATURES, CLASSES)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, CLASSES))


def client_shard(partition: int, partitions: int, seed: int, unequal: bool):
    """Client ``partition``'s share of the standardised digits (unequal sizes 1 : 2 : ... when ``unequal``)."""
    x, y = load_digits(return_X_y=True)
    x = (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-8)
    order = np.random.default_rng(seed).permutation(len(y))
    sizes = np.arange(1, partitions + 1, dtype=float) if unequal else np.ones(partitions)
    cuts = np.floor(np.cumsum(sizes) / sizes.sum() * len(y)).astype(int)[:-1]
    mine = np.split(order, cuts)[partition]
    return x[mine].astype(np.float32), y[mine]


def local_train(model: torch.nn.Module, state: dict, shard, steps: int, learning_rate: float) -> dict:
    """``steps`` full-batch gradient steps (cross-entropy) from ``state``."""
    model.load_state_dict(state)
    optimiser = torch.optim.SGD(model.parameters(), lr=learning_rate)
    features, labels = torch.from_numpy(shard[0]), torch.from_numpy(shard[1]).long()
    for _ in range(steps):
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(model(features), labels).backward()
        optimiser.step()
    return model.state_dict()
