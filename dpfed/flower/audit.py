"""One audit of a Flower app: configuration check of its strategy, a run on Flower's runtime recording
every release, and the transcript check against what the accountant assumed (what Flower runs)."""

from __future__ import annotations

import time

from dpfed.flower.check import check_config
from dpfed.flower.config import CLAIMS
from dpfed.flower.example_app import AppSettings, build_client_app, build_strategy, supernodes
from dpfed.flower.findings import worst
from dpfed.flower.opacus_check import opacus_findings
from dpfed.flower.read import config_from_strategy
from dpfed.flower.transcript_check import Assumptions, check_transcript


def assumptions_for(config) -> Assumptions:
    """What the corrected accounting assumes Flower runs: fixed-size m of N, z, C, one release a round."""
    return Assumptions("fixed-size", config.nodes, config.sampled, config.rounds, config.noise_multiplier, config.clip)


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
    transcript_findings = check_transcript(result["transcript"], assumptions_for(config), alpha)
    findings = configuration["findings"] + transcript_findings
    return {"settings": settings.__dict__, "delta": delta, "claims": list(claims),
            "rows": configuration["rows"], "configuration_findings": [f.to_dict() for f in configuration["findings"]],
            "transcript_findings": [f.to_dict() for f in transcript_findings],
            "transcript": result["transcript"].to_dict(),
            "canaries": canary_scores(settings, result, delta),
            "accounted_epsilon": configuration["rows"]["runs"]["epsilon"],
            "verdict": "VIOLATION" if worst(findings) == "critical" else "PASS",
            "seconds": {"accounting": accounted - started, "flower_run": ran - accounted,
                        "transcript_check": time.perf_counter() - ran}}


THREAT_MODELS = ("final_model", "all_iterates")


def canary_scores(settings: AppSettings, result: dict, delta: float) -> dict | None:
    """Each canary's cosine with the final model delta and with the all-iterates direction (every round's
    normalised delta summed), its secret sign, and each threat model's mean-shift GDP estimate (None
    without canaries). See ``dpfed.flower.canaries``."""
    import numpy as np

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
    return out


__all__ = ["CLAIMS", "THREAT_MODELS", "audit_example", "assumptions_for", "canary_scores"]
