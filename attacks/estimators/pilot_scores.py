"""One pilot world's scores, sorted where they live, for ``attacks.estimators.grid.pilot_grid``.

NumPy scores are sorted with NumPy (the host path, unchanged). A PyTorch tensor is sorted on its own
device (a CUDA pilot never travels to the host whole): only what the grid reads comes back, namely a few
order statistics, a strided subsample (at most ``POOLED_QUANTILE_SAMPLE`` scores a world) and the number
of scores at or below each candidate threshold. Every value read back is a value of the sorted scores
and every count an integer, so the grid equals the one NumPy chooses from the same scores.
"""

from __future__ import annotations

import numpy as np


def is_torch(scores) -> bool:
    return type(scores).__module__.split(".")[0] == "torch"


class SortedPilot:
    """The sorted scores of one pilot world (``np.sort`` on the host, ``torch.sort`` on a tensor's device)."""

    def __init__(self, scores):
        self.on_device = is_torch(scores)
        if self.on_device:
            import torch

            self.sorted = torch.sort(scores.reshape(-1).to(torch.float64)).values
        else:
            self.sorted = np.sort(np.asarray(scores, float))
        self.size = int(self.sorted.shape[0])

    def _host(self, values) -> np.ndarray:
        return values.cpu().numpy() if self.on_device else values

    def take(self, index: np.ndarray) -> np.ndarray:
        """The order statistics at 0-based ``index`` (a NumPy integer array), on the host."""
        if self.on_device:
            import torch

            index = torch.as_tensor(index, dtype=torch.int64).to(self.sorted.device)
        return self._host(self.sorted[index])

    def head(self, k: int) -> np.ndarray:
        return self._host(self.sorted[:k])

    def tail(self, k: int) -> np.ndarray:
        return self._host(self.sorted[self.size - k :])

    def strided(self, stride: int):
        """Every ``stride``-th sorted score (left where it lives)."""
        return self.sorted[::stride]

    def at_most(self, thresholds: np.ndarray) -> np.ndarray:
        """The number of scores <= each threshold (``searchsorted(side="right")``), on the host."""
        if not self.on_device:
            return np.searchsorted(self.sorted, thresholds, side="right")
        import torch

        where = torch.as_tensor(np.asarray(thresholds, dtype=np.float64)).to(self.sorted.device)
        return torch.searchsorted(self.sorted, where, right=True).cpu().numpy()


def pooled_sample(first: SortedPilot, second: SortedPilot, stride: int) -> np.ndarray:
    """Both worlds' strided subsamples, pooled, on the host (sorted on the device first when both live
    there, which makes the host's quantile selection cheaper and changes no quantile)."""
    if first.on_device and second.on_device and first.sorted.device == second.sorted.device:
        import torch

        pooled = torch.cat([first.strided(stride), second.strided(stride)])
        return torch.sort(pooled).values.cpu().numpy()
    return np.concatenate([first._host(first.strided(stride)), second._host(second.strided(stride))])
