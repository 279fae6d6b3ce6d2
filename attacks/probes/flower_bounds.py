"""From one Flower run with canaries to scores, estimates, lower bounds and a one-run decision.

``canary_scores`` scores each canary in both threat models (``attacks.probes.flower_scores``) and in the rounds
it took part in (the measured shift); ``canary_bounds`` gives both one-run estimators' lower bounds
(``attacks.estimators.estimate_one_run``: Steinke et al.'s, rigorous, and the Gaussian f-DP one of Mahloujifar
et al., model-based) per threat model, each at confidence ``1 - (1 - c) / 2`` (Bonferroni over the two threat
models), and a fifth, model-based bound from the measured shift (at ``c`` on its own; it does not enter the
decision). ``one_run_decision`` (``attacks.probes.one_run``, shared by every one-run probe) tests the claim with
the rigorous bounds only.
"""

from __future__ import annotations

import numpy as np

from attacks.probes.one_run import bound_dict

THREAT_MODELS = ("final_model", "all_iterates")


def minimum_canaries(delta: float, confidence: float, largest: int = 4096) -> int:
    """The fewest canaries whose rigorous bound (confidence split over the two threat models, as ``canary_bounds``
    computes it) can exceed 0 when every guess is right."""
    from attacks.probes import one_run

    return one_run.minimum_canaries(delta, confidence, len(THREAT_MODELS), largest)


def check_canary_count(canaries: int, delta: float, confidence: float, field: str = "canaries") -> None:
    """Refuse, before any run, a number of canary SuperNodes with which no bound of either threat model exceeds 0."""
    from attacks.probes import one_run

    one_run.check_canary_count(canaries, delta, confidence, len(THREAT_MODELS), field)


def canary_scores(run: dict, canaries: int, seed: int, configured_shift: float, delta: float) -> dict:
    """Each canary's cosine with the final model delta and with the all-iterates direction, its secret sign, each
    threat model's mean-shift GDP estimate, and the measured-shift estimate. ``run``: ``dpfed.flower.run.run_app``'s
    result; ``configured_shift``: 1/z of the configuration (for comparison)."""
    from attacks.probes.flower_scores import all_iterates_direction, cosines, mean_shift_estimate
    from dpfed.flower.canaries import canary_directions, canary_signs

    deltas = run["round_deltas"]
    final = np.sum(deltas, axis=0) if deltas else np.zeros(sum(np.size(a) for a in run["initial"]))
    directions = canary_directions(canaries, final.size, seed)
    signs = canary_signs(canaries, seed)
    out = {"dim": int(final.size), "signs": signs.astype(int).tolist(), "rounds": len(deltas)}
    for name, against in (("final_model", final), ("all_iterates", all_iterates_direction(deltas or [final]))):
        scores = cosines(directions, against)
        out[name] = {"scores": scores.tolist(), "estimate": mean_shift_estimate(scores, signs, final.size, delta)}
    out["measured_shift"] = measured_shift_scores(run, directions, signs, configured_shift, delta)
    return out


def participation(run: dict, canaries: int) -> np.ndarray:
    """``(k, T)``: whether canary ``j`` replied in the ``t``-th recorded round (the transcript's replies and the
    host's map of canary nodes)."""
    from dpfed.flower.records import releases

    by_round = dict(releases(run["transcript"]))
    took_part = np.zeros((canaries, len(run["round_numbers"])), dtype=bool)
    for t, r in enumerate(run["round_numbers"]):
        for node in by_round.get(r, {}).get("replies", []):
            j = run["canary_nodes"].get(int(node), -1)
            if 0 <= j < canaries:
                took_part[j, t] = True
    return took_part


def measured_shift_scores(run: dict, directions, signs, configured_shift: float, delta: float) -> dict:
    """Each canary's signed per-round scores, the rounds it took part in, the transcript's sampling rate and
    releases, the shift ``a`` with its standard error, and the epsilon of the replace-one pair the sampler
    realises at that shift (an estimate, not a bound)."""
    from accounting.replace_one_pair import MAX_SHIFT
    from attacks.probes.flower_scores import measured_shift, measured_shift_epsilon, round_scores
    from dpfed.flower.records import releases

    payloads = [payload for _, payload in releases(run["transcript"])]
    rate = float(np.mean([len(p["sampled"]) / p["population"] for p in payloads])) if payloads else 0.0
    scores = round_scores(directions, signs, run["round_deltas"])
    shift = measured_shift(scores, participation(run, len(signs)))
    epsilon = measured_shift_epsilon(shift["shift"], rate, len(payloads), delta) if payloads and rate > 0 else 0.0
    return {"rate": rate, "releases": len(payloads), **shift, "configured_shift": configured_shift,
            "estimate": {"epsilon": epsilon, "shift": shift["shift"], "stderr": shift["stderr"],
                         "at_least": shift["shift"] > MAX_SHIFT,
                         "assumptions": "each canary scored only in the rounds it replied in (the transcript); in "
                                        "units of |D_t|/sqrt(d) its signed score has mean a, the per-round shift of "
                                        "one client's full-norm update; epsilon of the replace-one pair the sampler "
                                        "realises (accounting.replace_one_pair) at the measured a, the transcript's "
                                        "rate and releases; an estimate, not a bound"}}


def canary_bounds(canaries: dict, delta: float, confidence: float) -> list[dict]:
    """``[{"threat_model", "method", "epsilon", "confidence", "rigorous", "assumptions", "details"}]``."""
    from attacks.estimators import estimate_one_run

    per_model = 1.0 - (1.0 - confidence) / len(THREAT_MODELS)
    included = np.asarray(canaries["signs"]) > 0
    out = []
    for model in THREAT_MODELS:
        for b in estimate_one_run(canaries[model]["scores"], included, delta, per_model):
            out.append(bound_dict(b, model, "Here the canaries' secret signs are guessed (replace-one neighbours); "
                                            "Bonferroni over the two threat models."))
    if canaries.get("measured_shift", {}).get("participations"):
        out.append(measured_shift_bound(canaries["measured_shift"], delta, confidence))
    return out


def measured_shift_bound(measured: dict, delta: float, confidence: float) -> dict:
    """Model-based lower bound: the sampler's replace-one pair's epsilon at a one-sided ``confidence`` lower bound
    on the per-round shift ``a`` (Student t over the canaries), at the transcript's rate and releases. Valid if,
    in a round it took part in, a canary's score is its shift plus noise symmetric about 0 (Gaussian for the
    pair's epsilon to be the mechanism's)."""
    from attacks.probes.flower_scores import measured_shift_epsilon, shift_lower_bound

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

