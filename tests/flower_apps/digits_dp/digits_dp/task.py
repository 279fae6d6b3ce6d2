"""Model, data and local training: softmax regression in NumPy on scikit-learn's digits."""

import numpy as np
from sklearn.datasets import load_digits

FEATURES, CLASSES = 64, 10


def initial_weights(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(0.0, 0.01, size=(FEATURES, CLASSES)).astype(np.float32), np.zeros(CLASSES, np.float32)]


def load_partition(partition_id: int, num_partitions: int, seed: int):
    """This client's equal share of the shuffled digits (the remainder is dropped so that every client
    holds the same number of examples, as equal FedAvg weights need)."""
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    order = np.random.default_rng(seed).permutation(len(y))
    share = len(y) // num_partitions
    mine = order[partition_id * share:(partition_id + 1) * share]
    return x[mine], y[mine]


def train(weights: list[np.ndarray], x: np.ndarray, y: np.ndarray, epochs: int, lr: float) -> list[np.ndarray]:
    w, b = (a.astype(np.float64) for a in weights)
    onehot = np.eye(CLASSES)[y]
    for _ in range(epochs):
        logits = x @ w + b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        grad = (p - onehot) / len(y)
        w -= lr * x.T @ grad
        b -= lr * grad.sum(axis=0)
    return [w.astype(np.float32), b.astype(np.float32)]


def accuracy(weights: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(x @ weights[0] + weights[1], axis=1) == y))
