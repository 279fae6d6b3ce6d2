"""Federated SVM hyper-parameter tuning: each agent tunes (C, RBF gamma) of an SVM on its own shard.

A point ``x`` in [0, 1]^2 maps to ``log10 C`` and ``log10 gamma`` linearly within ``log10_c`` and
``log10_gamma`` (log scale; the reference code mapped linearly in C and gamma). Each agent splits its
shard 50/50 into train and validation (stratified, fixed ``split_seed``), standardises features with the
training mean and std, and the observed value is the validation AUC (to maximise); the utility is
``1 - best AUC``. Evaluations are noise-free and deterministic: ``x`` is snapped to a
``resolution x resolution`` grid of hyper-parameters and each (agent, grid cell) is fitted at most once
(lazy cache), so repeated runs and audits reuse fits. Nothing is pre-computed beyond what is queried.
"""

from __future__ import annotations

import numpy as np

from accounting.errors import ConfigurationError

DATASETS = ("breast-cancer", "digits")


def sklearn_shards(name: str, num_agents: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Split a scikit-learn data set into ``num_agents`` stratified shards (binary labels).

    ``breast-cancer``: malignant vs benign. ``digits``: digit < 5 vs >= 5.
    """
    from sklearn import datasets

    if name == "breast-cancer":
        x, y = datasets.load_breast_cancer(return_X_y=True)
    elif name == "digits":
        x, y = datasets.load_digits(return_X_y=True)
        y = (y < 5).astype(int)
    else:
        raise ConfigurationError(
            "objective", f"unknown data set {name!r}; choose one of {', '.join(DATASETS)}"
        )
    rng = np.random.default_rng(seed)
    shards: list[list[int]] = [[] for _ in range(num_agents)]
    for label in np.unique(y):  # deal each class round-robin after shuffling: stratified shards
        idx = rng.permutation(np.flatnonzero(y == label))
        offset = int(rng.integers(num_agents))
        for j, i in enumerate(idx):
            shards[(j + offset) % num_agents].append(int(i))
    if min(len(s) for s in shards) < 4:
        raise ConfigurationError("num_agents", f"{num_agents} agents leave shards of fewer than 4 samples")
    return [(x[s], y[s]) for s in shards]


def rank_auc(labels, scores) -> float:
    """Area under the ROC curve (Mann-Whitney statistic, ties count one half); labels in {0, 1}."""
    from scipy.stats import rankdata

    labels = np.asarray(labels).astype(bool)
    ranks = rankdata(scores)
    pos, neg = labels.sum(), (~labels).sum()
    if pos == 0 or neg == 0:
        return 0.5
    return float((ranks[labels].sum() - pos * (pos + 1) / 2) / (pos * neg))


def _split(x, y, rng):
    """Stratified 50/50 split of one shard; both halves keep both classes when possible."""
    train, val = [], []
    for label in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == label))
        half = max(1, len(idx) // 2) if len(idx) > 1 else len(idx)
        train.extend(idx[:half])
        val.extend(idx[half:] if len(idx) > 1 else idx)
    return np.asarray(train), np.asarray(val)


class SVMTuning:
    """The federated SVM-tuning objective (see module docstring)."""

    dim = 2
    utility_name = "1 - AUC"

    def __init__(
        self, shards, log10_c=(-3.0, 3.0), log10_gamma=(-4.0, 1.0), resolution: int = 128, split_seed: int = 0
    ):
        if not shards:
            raise ConfigurationError("num_agents", "no agent shards")
        self.num_agents = len(shards)
        self.log10_c, self.log10_gamma = tuple(log10_c), tuple(log10_gamma)
        self.resolution = int(resolution)
        self._data = []
        rng = np.random.default_rng(split_seed)
        for x, y in shards:
            x, y = np.asarray(x, float), np.asarray(y).ravel().astype(int)
            if len(np.unique(y)) < 2:
                raise ConfigurationError("data", "every agent's shard needs both classes")
            tr, va = _split(x, y, rng)
            mean, std = x[tr].mean(axis=0), x[tr].std(axis=0)
            std = np.where(std > 0, std, 1.0)
            self._data.append(((x[tr] - mean) / std, y[tr], (x[va] - mean) / std, y[va]))
        self._cache: dict[tuple[int, int, int], float] = {}

    @property
    def fits(self) -> int:
        """Number of SVM fits performed so far (cache misses)."""
        return len(self._cache)

    def cell(self, x) -> np.ndarray:
        """Grid cell indices of points in [0, 1]^2, shape (..., 2)."""
        x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
        return np.minimum((x * self.resolution).astype(int), self.resolution - 1)

    def hyperparameters(self, cell) -> tuple[float, float]:
        """(C, gamma) at the centre of a grid cell."""
        u = (np.asarray(cell, dtype=float) + 0.5) / self.resolution
        c = 10 ** (self.log10_c[0] + u[0] * (self.log10_c[1] - self.log10_c[0]))
        g = 10 ** (self.log10_gamma[0] + u[1] * (self.log10_gamma[1] - self.log10_gamma[0]))
        return float(c), float(g)

    def auc(self, agent: int, cell) -> float:
        key = (int(agent), int(cell[0]), int(cell[1]))
        if key not in self._cache:
            from sklearn.svm import SVC

            xt, yt, xv, yv = self._data[agent]
            c, g = self.hyperparameters(cell)
            model = SVC(C=c, gamma=g, kernel="rbf").fit(xt, yt)
            sv = model.support_vectors_  # decision function computed directly (same as decision_function)
            sq = ((xv[:, None, :] - sv[None, :, :]) ** 2).sum(axis=-1)
            scores = np.exp(-g * sq) @ model.dual_coef_[0] + model.intercept_[0]
            if model.classes_[1] != 1:
                scores = -scores
            self._cache[key] = rank_auc(yv, scores)
        return self._cache[key]

    def evaluate(self, x, rng=None):
        """Validation AUC of each agent at its points ``x`` (N, k, 2); observed == true (no noise)."""
        cells = self.cell(x)
        values = np.array(
            [[self.auc(n, cells[n, j]) for j in range(cells.shape[1])] for n in range(cells.shape[0])]
        )
        return values, values

    def utility(self, best_true) -> np.ndarray:
        return 1.0 - np.asarray(best_true, dtype=float)
