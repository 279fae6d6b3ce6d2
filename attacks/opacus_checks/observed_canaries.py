"""Gradient canaries that joined a user's DP-SGD training (``dpfed.dpsgd.loop_canaries``), through the training's own
optimizer, and the one-run bounds on epsilon their scores give (``attacks.estimators``):

- ``canary-bound-above-claim``: gradient canaries through the training's own optimizer (``canary_result``) give
  rigorous one-run bounds (counted guesses, Steinke et al.; weighted guesses from the continuous scores) whose
  combined test rejects the claim; the model-based bounds beside them give no verdict.
"""

from __future__ import annotations

from attacks.opacus_checks.findings import OpacusFinding


def canary_check(training, claim: float | None, delta: float, confidence: float = 0.95) -> dict | None:
    """The one-run result of the canaries that joined the training (``dpfed.dpsgd.loop_canaries``); None when no
    canary ran."""
    canaries = training.canaries
    if canaries is None or not canaries.steps:
        return None
    return canary_result(canaries.scores, canaries.included, canaries.steps, claim, delta, confidence,
                         "all iterates (white box), one run, through the user's optimizer")


def canary_result(scores, included, steps: int, claim: float | None, delta: float, confidence: float,
                  threat_model: str) -> dict:
    """Gradient canaries' one-run bounds (``CANARY_ONE_RUN_METHODS``: Steinke et al.'s counted guesses and the
    weighted guesses of the continuous scores, rigorous; the Gaussian f-DP refinement and the Gaussian view of the
    scores, model-based) and the decision on ``claim``: VIOLATION when the rigorous ones' combined test rejects it
    (no claim: none)."""
    import numpy as np

    from attacks.estimators import CANARY_ONE_RUN_METHODS, estimate_one_run
    from attacks.estimators.one_run import one_run_ceiling
    from attacks.probes.one_run import bound_dict, one_run_decision

    included = np.asarray(included, dtype=bool)
    bounds = [bound_dict(b, threat_model) for b in estimate_one_run(scores, included, delta, confidence,
                                                                    methods=CANARY_ONE_RUN_METHODS, claim=claim)]
    if claim is None:
        status, p_value, ceiling = "NO CLAIM", None, one_run_ceiling(len(included), delta, confidence)
    else:
        status, p_value, ceiling = one_run_decision(bounds, len(included), claim, delta, confidence)
    return {"bounds": bounds, "status": status, "p_value": p_value, "ceiling": ceiling, "canaries": len(included),
            "steps": int(steps), "included": int(included.sum()), "confidence": confidence}


def canary_findings(result: dict | None, claim: float | None) -> list:
    if result is None:
        return []
    rigorous = max((b["epsilon"] for b in result["bounds"] if b.get("rigorous", True)), default=0.0)

    def listed(rigorous_ones: bool) -> str:
        return ", ".join(f"{b['method']} {b['epsilon']:.3g}" for b in result["bounds"]
                         if b.get("rigorous", True) == rigorous_ones)

    words = (f"{result['canaries']} gradient canaries through the training's own optimizer ({result['included']} in, "
             f"{result['steps']} steps): rigorous lower bounds on epsilon {listed(True)} (each at "
             f"{result['confidence']:g}; the claim tested over them together; ceiling {result['ceiling']:.3g}); "
             f"model-based, no verdict: {listed(False)}")
    each = {b["method"]: b["epsilon"] for b in result["bounds"]}
    if result["status"] == "VIOLATION":
        return [OpacusFinding("canary-bound-above-claim", "critical", f"{words}; the rigorous ones reject the claim "
                              f"{claim:.4g} (p = {result['p_value']:.2g})",
                              {"lower_bound": rigorous, "p_value": result["p_value"], "bounds": each})]
    return [OpacusFinding("canary-bound", "info", f"{words}; {result['status']} against the claim",
                          {"lower_bound": rigorous, "ceiling": result["ceiling"], "bounds": each})]
