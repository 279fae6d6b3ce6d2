"""The objectives of a batch of FTS runs: one shared objective, or one drawn per run from its own seed.

A synthetic objective shared by all runs is evaluated for the whole batch in one call (its functions
take a leading trial axis), on the batch's array backend (on torch its functions are copied to the
device once and the observation noise is drawn there); any other objective is evaluated run by run on
the host (on torch: points copied to the host and values back, with per-run NumPy streams). Either way
run k's observation noise comes from run k's stream (numpy) or the call's stream (torch).
"""

from __future__ import annotations

import numpy as np


class TrialObjectives:
    """``evaluate`` and ``utility`` over a leading trial axis (K, N, ...), on ``arrays`` (numpy default)."""

    def __init__(self, config, objective, objective_streams, arrays=None):
        from dpfed.objectives import make_objective
        from dpfed.objectives.synthetic import SyntheticGP

        self.shared = objective
        if objective is None:
            self.per_trial = [make_objective(config, g) for g in objective_streams.generators]
        else:
            self.per_trial = None
        self.vectorised = isinstance(objective, SyntheticGP)
        first = objective if objective is not None else self.per_trial[0]
        self.utility_name = getattr(first, "utility_name", "utility")
        self.arrays = arrays
        self.on_device = self.vectorised and arrays is not None and not arrays.is_numpy
        if self.on_device:
            from dpfed.fts.acquisition import LinearFunctions

            f = objective.functions
            self.device_functions = LinearFunctions(
                f.features.on(arrays), arrays.asarray(f.weights), arrays.asarray(f.offsets)
            )
            self.optimum = arrays.asarray(objective.optimum)

    def _objective(self, k: int):
        return self.shared if self.per_trial is None else self.per_trial[k]

    def evaluate(self, x, observation_streams):
        """Noisy and true values (K, N, k) of the per-agent points ``x`` (K, N, k, d), on the backend of
        ``x``; ``observation_streams`` per-run NumPy streams, or the device streams when ``on_device``."""
        if self.on_device:
            true = self.device_functions(x)
            return true + self.shared.noise_std * observation_streams.standard_normal(tuple(true.shape)), true
        host = self.arrays is not None and not self.arrays.is_numpy
        if host:
            x = self.arrays.to_numpy(x)
        if self.vectorised:
            y, t = self.shared.evaluate(x, observation_streams)
        else:
            pairs = [self._objective(k).evaluate(x[k], g) for k, g in enumerate(observation_streams.generators)]
            y, t = np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])
        return (self.arrays.asarray(y), self.arrays.asarray(t)) if host else (y, t)

    def utility(self, best_true):
        """Per-agent utility (K, N) of the best true values so far (K, N)."""
        if self.on_device:
            return self.arrays.xp.clip(self.optimum - best_true, min=0.0)
        if self.arrays is not None and not self.arrays.is_numpy:
            return self.arrays.asarray(self._host_utility(self.arrays.to_numpy(best_true)))
        return self._host_utility(best_true)

    def _host_utility(self, best_true) -> np.ndarray:
        if self.vectorised:
            return np.broadcast_to(self.shared.utility(best_true), best_true.shape).copy()
        return np.stack([self._objective(k).utility(b) for k, b in enumerate(best_true)])
