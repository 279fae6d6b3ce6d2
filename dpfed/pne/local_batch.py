"""The local objectives of many runs at once: row k is ``LocalObjectives(..., rng=generators[k])``.

The perturbations are drawn from each run's own stream in the same order as ``LocalObjectives`` draws
them, and evaluated for a group of runs in one computation whose per-run slices repeat
``LocalObjectives.values`` operation for operation (same sums in the same order: the clients' mean of
one node is the pairwise sum a single run's reduction uses), so every value is bit-identical.
"""

from __future__ import annotations

import math

import numpy as np

from dpfed.pne.objectives import LocalObjectives, Objective, checked_local_settings, wave_bumps
from dpfed.trials import TrialStreams


class LocalObjectivesBatch:
    """``LocalObjectives`` of ``len(generators)`` runs (see module docstring)."""

    def __init__(self, objective: Objective, num_clients, heterogeneity, kind, generators, waves: int = 3):
        self.objective, self.kind = objective, kind
        self.num_clients, self.heterogeneity = checked_local_settings(num_clients, heterogeneity, kind)
        streams, k, m, d = TrialStreams(generators), len(generators), self.num_clients, objective.domain.shape[0]
        self._shift = streams.standard_normal((k, m)) * self.heterogeneity
        freq = streams.uniform(1.0, 4.0, size=(k, m, waves))
        self._dirs = streams.standard_normal((k, m, waves, d))
        self._dirs /= np.sqrt(np.add.reduce(self._dirs * self._dirs, axis=-1, keepdims=True))
        self._offset = streams.uniform(0.0, 2.0 * np.pi, size=(k, m, waves))[..., None]
        self._weight = streams.standard_normal((k, m, waves)) / math.sqrt(waves)
        self._cycles = 2.0 * np.pi * freq[..., None]
        self._lo, self._span = objective.domain[:, 0], objective.domain[:, 1] - objective.domain[:, 0]

    def values(self, rows, x) -> np.ndarray:
        """Local values of the runs ``rows`` (indices, (G,)) at their points ``x`` (G, n, d): (G, M, n)."""
        g, n, d = x.shape
        m = self.num_clients
        if g == 1 and self.kind == "bumps" and m > 1 and self.heterogeneity != 0:  # one run: its own operations
            r, points = rows[0], x[0]
            unit = (points - self._lo) / self._span
            raw = wave_bumps(self.heterogeneity, self._weight[r], self._cycles[r], self._dirs[r], self._offset[r], unit)
            return (self.objective.values(points)[None, :] + LocalObjectives.centred(raw))[None]
        base = self.objective.values(x.reshape(g * n, d)).reshape(g, 1, n)
        if self.kind == "none" or m == 1 or self.heterogeneity == 0:
            return base + np.zeros((g, m, n))
        if self.kind == "shift":  # a broadcast array's reduction order is the iterator's choice: per run
            shifts = [np.broadcast_to(shift[:, None], (m, n)) for shift in self._shift[rows]]
            return base + np.stack([LocalObjectives.centred(raw) for raw in shifts])
        unit = (x - self._lo) / self._span
        angle = self._cycles[rows] * np.einsum("gmwd,gnd->gmwn", self._dirs[rows], unit)
        waves = np.sin(angle + self._offset[rows])
        raw = self.heterogeneity * np.einsum("gmw,gmwn->gmn", self._weight[rows], waves)
        if n == 1:  # one node: a run's reduction over clients is a contiguous (pairwise) sum, as here
            total = np.add.reduce(np.ascontiguousarray(raw[:, :, 0]), axis=1)[:, None, None]
        else:  # several nodes: a run adds the clients' rows one after another, as here
            total = np.add.reduce(raw, axis=1, keepdims=True)
        return base + (raw - total / m)
