"""One-run DP-SGD audit: many gradient canaries in one opacus training, each on its own coordinate and
included with probability 1/2; per-canary scores as the all-iterates (or last-iterate) probe's; bounds
from Steinke et al.'s one-run estimator and its Gaussian f-DP refinement (Mahloujifar et al.).

Valid as those estimators require: inclusions are independent fair coins drawn before training, and a
canary's score depends only on the released iterates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accounting.errors import require_number
from attacks.estimators import estimate_one_run
from attacks.probes.dpsgd import DpsgdAllIteratesProbe, DpsgdLastIterateProbe


@dataclass
class OneRunResult:
    scores: np.ndarray
    included: np.ndarray
    bounds: list
    opacus: object

    def bound(self, method: str):
        return next(b for b in self.bounds if b.method == method)


def one_run_gradient_canaries(probe: DpsgdAllIteratesProbe, canaries: int, seed: int, delta: float,
                              confidence: float = 0.95, inserted: bool = True) -> OneRunResult:
    """Train once with ``canaries`` gradient canaries, each included with probability 1/2 (drawn from
    ``seed``); score each with ``probe``'s score (its view: all iterates, or the last iterate for a
    ``DpsgdLastIterateProbe``). ``inserted=False`` draws the coins but inserts no canary (a null run)."""
    from dpfed.dpsgd.planted import scaled_noise
    from dpfed.dpsgd.train import train_gradient_canaries

    canaries = int(require_number("canaries", canaries, low=2, integer=True))
    rng = np.random.default_rng(seed)
    included = rng.random(canaries) < 0.5
    with scaled_noise(probe.noise_factor()):
        run = train_gradient_canaries(probe.training_setup(), canaries, included & inserted,
                                      int(rng.integers(0, 2**62)))
    scores = probe.score_updates(run.normalised_updates())
    return OneRunResult(scores, included, estimate_one_run(scores, included, delta, confidence), run.opacus)


__all__ = ["DpsgdAllIteratesProbe", "DpsgdLastIterateProbe", "OneRunResult", "one_run_gradient_canaries"]
