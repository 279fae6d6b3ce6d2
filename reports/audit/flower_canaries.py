"""Lower bounds on epsilon from a Flower run's canary scores (``dpfed.flower.audit.canary_scores``).

Each threat model's scores (final model, all iterates) go to both one-run estimators
(``attacks.estimators.estimate_one_run``: Steinke et al.'s, rigorous, and the Gaussian f-DP one of
Mahloujifar et al., model-based), guessing each canary's sign (``+1`` taken as "included"). Each bound is
computed at confidence ``1 - (1 - confidence) / 2`` (Bonferroni over the two threat models), so the best of
the four still holds at ``confidence`` for the rigorous one and under its model for the f-DP one.
"""

from __future__ import annotations

from dpfed.flower.audit import THREAT_MODELS


def canary_bounds(canaries: dict, delta: float, confidence: float) -> list[dict]:
    """``[{"threat_model", "method", "epsilon", "confidence", "rigorous", "assumptions", "details"}]`` for both
    threat models and both one-run estimators."""
    import numpy as np

    from attacks.estimators import estimate_one_run

    per_model = 1.0 - (1.0 - confidence) / len(THREAT_MODELS)
    included = np.asarray(canaries["signs"]) > 0
    out = []
    for model in THREAT_MODELS:
        for b in estimate_one_run(canaries[model]["scores"], included, delta, per_model):
            out.append({"threat_model": model, "method": b.method, "epsilon": b.epsilon,
                        "confidence": b.confidence, "rigorous": b.rigorous,
                        "assumptions": b.assumptions + " Here the canaries' secret signs are guessed (replace-one "
                                       "neighbours); Bonferroni over the two threat models.",
                        "details": {k: v for k, v in b.details.items() if isinstance(v, (int, float))}})
    return out


def best_bound(bounds: list[dict], rigorous: bool | None = None) -> dict | None:
    """The largest bound (of the rigorous ones only, when ``rigorous`` is True)."""
    chosen = [b for b in bounds if rigorous is None or b["rigorous"] == rigorous]
    return max(chosen, key=lambda b: b["epsilon"]) if chosen else None
