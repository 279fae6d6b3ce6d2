"""One audit of a Flower app: configuration check of its strategy, a run on Flower's runtime recording
every release, and the transcript check against what the accountant assumed (what Flower runs)."""

from __future__ import annotations

import time

import numpy as np

from dpfed.flower.check import check_config
from dpfed.flower.config import CLAIMS
from dpfed.flower.example_app import AppSettings, build_client_app, build_strategy, supernodes
from dpfed.flower.findings import worst
from dpfed.flower.opacus_check import opacus_findings
from dpfed.flower.read import config_from_strategy
from dpfed.flower.transcript_check import Assumptions, assumptions_from_config, check_transcript


def assumptions_for(config, delta: float = 1e-5, claimed_epsilon: float | None = None) -> Assumptions:
    """What the corrected accounting assumes Flower runs: fixed-size m of N, z, C, one release a round (adaptive
    wrappers: each round's clip, z_u on the update); epsilons compared at ``delta`` with the claim, if any."""
    return assumptions_from_config(config, delta, claimed_epsilon=claimed_epsilon)


def audit_example(settings: AppSettings, delta: float = 1e-5, claims=(),
                  claimed_epsilon: float | None = None, alpha: float = 1e-3) -> dict:
    """Configuration check, Flower run and transcript check of the example app; ``verdict`` is VIOLATION
    when any finding is critical, PASS otherwise."""
    from dpfed.flower.run import run_example

    started = time.perf_counter()
    strategy = build_strategy(settings, transcript=None)  # the very strategy the ServerApp builds
    config, configured_m = config_from_strategy(strategy, nodes=supernodes(settings), rounds=settings.rounds,
                                                weighting="examples")
    configuration = check_config(config, delta, configured_m, claimed_epsilon, claims)
    configuration["findings"] += opacus_findings(build_client_app(settings))  # the very ClientApp that runs
    accounted = time.perf_counter()
    result = run_example(settings)
    ran = time.perf_counter()
    transcript_findings = check_transcript(result["transcript"], assumptions_for(config, delta, claimed_epsilon), alpha)
    findings = configuration["findings"] + transcript_findings
    return {"settings": settings.__dict__, "delta": delta, "claims": list(claims),
            "rows": configuration["rows"], "configuration_findings": [f.to_dict() for f in configuration["findings"]],
            "transcript_findings": [f.to_dict() for f in transcript_findings],
            "transcript": result["transcript"].to_dict(),
            "canaries": canary_scores(settings, result, delta),
            "accounted_epsilon": configuration["rows"]["runs"]["epsilon"],
            "realised_epsilon": configuration["rows"]["worst-pair"]["epsilon"],
            "verdict": "VIOLATION" if worst(findings) == "critical" else "PASS",
            "seconds": {"accounting": accounted - started, "flower_run": ran - accounted,
                        "transcript_check": time.perf_counter() - ran}}


THREAT_MODELS = ("final_model", "all_iterates")


def canary_scores(settings: AppSettings, result: dict, delta: float) -> dict | None:
    """Each canary's cosine with the final model delta and with the all-iterates direction (every round's
    normalised delta summed), its secret sign, each threat model's mean-shift GDP estimate, and the
    measured-shift estimate from the rounds each canary took part in (None without canaries). See
    ``dpfed.flower.canaries``."""
    from dpfed.flower.canaries import (
        all_iterates_direction,
        canary_directions,
        canary_signs,
        cosines,
        mean_shift_estimate,
    )

    if not settings.canaries:
        return None
    final = np.concatenate([np.ravel(a) for a in result["final"].to_numpy_ndarrays()]) - np.concatenate(
        [np.ravel(a) for a in result["initial"]])
    directions = canary_directions(settings.canaries, final.size, settings.seed)
    signs = canary_signs(settings.canaries, settings.seed)
    out = {"dim": int(final.size), "signs": signs.astype(int).tolist(), "rounds": len(result["round_deltas"])}
    for name, against in (("final_model", final), ("all_iterates", all_iterates_direction(result["round_deltas"]))):
        scores = cosines(directions, against)
        out[name] = {"scores": scores.tolist(), "estimate": mean_shift_estimate(scores, signs, final.size, delta)}
    out["measured_shift"] = measured_shift_scores(settings, result, directions, signs, delta)
    return out


def canary_participation(settings: AppSettings, result: dict) -> np.ndarray:
    """``(k, T)``: whether canary ``j`` replied in the ``t``-th recorded round (from the transcript's replies and
    the node ids' partition ids; canary ``j`` is partition ``nodes + j``)."""
    from dpfed.flower.records import releases

    by_round = {r: payload for r, payload in releases(result["transcript"])}
    took_part = np.zeros((settings.canaries, len(result["rounds"])), dtype=bool)
    for t, r in enumerate(result["rounds"]):
        for node in by_round.get(r, {}).get("replies", []):
            j = result["partitions"].get(int(node), -1) - settings.nodes
            if 0 <= j < settings.canaries:
                took_part[j, t] = True
    return took_part


def measured_shift_scores(settings: AppSettings, result: dict, directions, signs, delta: float) -> dict:
    """The measured-shift estimate (``dpfed.flower.canaries``): each canary's signed per-round scores, the rounds
    it took part in, the sampling rate and releases the transcript shows, the shift ``a`` with its standard
    error, and the epsilon of the replace-one pair the sampler realises at that shift (an estimate, not a bound)."""
    from accounting.replace_one_pair import MAX_SHIFT
    from dpfed.flower.canaries import measured_shift, measured_shift_epsilon, round_scores
    from dpfed.flower.records import releases

    payloads = [payload for _, payload in releases(result["transcript"])]
    rate = float(np.mean([len(p["sampled"]) / p["population"] for p in payloads])) if payloads else 0.0
    scores = round_scores(directions, signs, result["round_deltas"])
    took_part = canary_participation(settings, result)
    shift = measured_shift(scores, took_part)
    epsilon = measured_shift_epsilon(shift["shift"], rate, len(payloads), delta) if payloads and rate > 0 else 0.0
    return {"scores": scores.tolist(), "took_part": took_part.astype(int).tolist(), "rate": rate,
            "releases": len(payloads), **shift, "configured_shift": 1.0 / settings.noise_multiplier,
            "estimate": {"epsilon": epsilon, "shift": shift["shift"], "stderr": shift["stderr"],
                         "at_least": shift["shift"] > MAX_SHIFT,  # epsilon taken at the cap: a lower figure
                         "assumptions": "each canary scored only in the rounds it replied in (the transcript); in "
                                        "units of |D_t|/sqrt(d) its signed score has mean a, the per-round shift of "
                                        "one client's full-norm update; epsilon of the replace-one pair the sampler "
                                        "realises (accounting.replace_one_pair) at the measured a, the transcript's "
                                        "rate m/N and its releases; an estimate, not a bound"}}


__all__ = ["CLAIMS", "THREAT_MODELS", "audit_example", "assumptions_for", "canary_scores"]
