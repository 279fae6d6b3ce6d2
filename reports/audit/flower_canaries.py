"""Lower bounds on epsilon from a Flower run's canary scores (``dpfed.flower.audit.canary_scores``).

Each threat model's scores (final model, all iterates) go to both one-run estimators
(``attacks.estimators.estimate_one_run``: Steinke et al.'s, rigorous, and the Gaussian f-DP one of
Mahloujifar et al., model-based), guessing each canary's sign (``+1`` taken as "included"). Each bound is
computed at confidence ``1 - (1 - confidence) / 2`` (Bonferroni over the two threat models), so the best of
the four still holds at ``confidence`` for the rigorous one and under its model for the f-DP one.

A fifth, model-based bound comes from the rounds each canary took part in (``measured_shift_bound``): it is
at ``confidence`` on its own and does not enter the one-run verdict, which uses the rigorous bounds only.
"""

from __future__ import annotations

from dpfed.flower.audit import THREAT_MODELS


def minimum_canaries(delta: float, confidence: float, largest: int = 4096) -> int:
    """The fewest canaries with which the rigorous one-run bound (at ``confidence`` split over the two threat models,
    as ``canary_bounds`` computes it) can exceed 0 when every guess is right."""
    from attacks.estimators.one_run import one_run_ceiling

    per_model = 1.0 - (1.0 - confidence) / len(THREAT_MODELS)
    low, high = 1, largest
    if one_run_ceiling(high, delta, per_model) <= 0:
        return largest + 1
    while low < high:  # the ceiling grows with the canaries
        middle = (low + high) // 2
        low, high = (middle + 1, high) if one_run_ceiling(middle, delta, per_model) <= 0 else (low, middle)
    return low


def check_canary_count(canaries: int, delta: float, confidence: float) -> None:
    """Refuse, before any run, a number of canaries (other than 0) with which no one-run bound can exceed 0."""
    from accounting.errors import ConfigurationError

    if canaries and canaries < (least := minimum_canaries(delta, confidence)):
        raise ConfigurationError("canaries", f"{canaries} canaries are too few for the one-run estimators: even with "
                                 f"every sign guessed right their bound is 0 at confidence {confidence:g} and delta "
                                 f"{delta:g}; use at least {least} (or 0 for no canaries)")


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
    if canaries.get("measured_shift"):
        out.append(measured_shift_bound(canaries["measured_shift"], delta, confidence))
    return out


def measured_shift_bound(measured: dict, delta: float, confidence: float) -> dict:
    """Model-based lower bound from the rounds each canary took part in: the sampler's replace-one pair's epsilon at a
    one-sided ``confidence`` lower bound on the per-round shift ``a`` (Student t over the canaries), at the
    transcript's sampling rate and releases. Valid if, in a round it took part in, a canary's score is its
    shift plus noise symmetric about 0 (Gaussian for the pair's epsilon to be the mechanism's): stated
    separately from, and not combined with, the bounds above."""
    from dpfed.flower.canaries import measured_shift_epsilon, shift_lower_bound

    low = shift_lower_bound(measured, confidence)
    releases = measured["releases"]
    epsilon = measured_shift_epsilon(low, measured["rate"], releases, delta) if releases else 0.0
    return {"threat_model": "all_iterates", "method": "measured-shift", "epsilon": epsilon,
            "confidence": confidence, "rigorous": False,
            "assumptions": "Model-based: each canary scored only in the rounds it replied in; the per-round shift a "
                           "of its score (in units of |D_t|/sqrt(d)) has a one-sided Student-t lower bound over the "
                           "canaries; epsilon of the replace-one pair the sampler realises (dp-accounting PLD rounded "
                           "down) at that bound, the transcript's rate and releases. Holds if the noise is Gaussian "
                           "and of a scale that does not depend on the data.",
            "details": {"shift_lower": low, "shift": measured["shift"], "canaries": measured["canaries"],
                        "participations": measured["participations"], "rate": measured["rate"],
                        "releases": measured["releases"]}}


def best_bound(bounds: list[dict], rigorous: bool | None = None) -> dict | None:
    """The largest bound (of the rigorous ones only, when ``rigorous`` is True)."""
    chosen = [b for b in bounds if rigorous is None or b["rigorous"] == rigorous]
    return max(chosen, key=lambda b: b["epsilon"]) if chosen else None
