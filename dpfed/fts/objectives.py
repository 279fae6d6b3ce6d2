"""The objectives of a batch of FTS runs: one shared objective, or one drawn per run from its own seed.

A synthetic objective shared by all runs is evaluated for the whole batch in one call (its functions
take a leading trial axis); any other objective is evaluated run by run. Either way run k's
observation noise comes from run k's stream, so a batch reproduces the one-at-a-time runs.
"""

from __future__ import annotations

import numpy as np


class TrialObjectives:
    """``evaluate`` and ``utility`` over a leading trial axis (K, N, ...)."""

    def __init__(self, config, objective, objective_streams):
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

    def _objective(self, k: int):
        return self.shared if self.per_trial is None else self.per_trial[k]

    def evaluate(self, x, observation_streams):
        """Noisy and true values (K, N, k) of the per-agent points ``x`` (K, N, k, d)."""
        if self.vectorised:
            return self.shared.evaluate(x, observation_streams)
        pairs = [self._objective(k).evaluate(x[k], g) for k, g in enumerate(observation_streams.generators)]
        return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])

    def utility(self, best_true) -> np.ndarray:
        """Per-agent utility (K, N) of the best true values so far (K, N)."""
        if self.vectorised:
            return np.broadcast_to(self.shared.utility(best_true), best_true.shape).copy()
        return np.stack([self._objective(k).utility(b) for k, b in enumerate(best_true)])
