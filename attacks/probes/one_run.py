"""What every one-run probe shares: its outcome, its bounds as report dicts, and its decision on a claim.

A one-run probe (``one_run = True``) runs the system once with ``trials`` canaries, each included by an
independent fair coin (``run_once(canaries, seed, epsilon, delta, confidence) -> OneRunOutcome``), instead of
``scores(world, trials, rng)`` over two worlds. Its users: ``attacks.probes.flower.FlowerAppProbe`` and
``attacks.probes.dpsgd_one_run.DpsgdOneRunProbe``; ``reports.audit.probes.run_one_run_probe`` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class OneRunOutcome:
    """What a one-run probe found: its bounds (dicts as ``ProbeSection.bounds``), its decision on the claim, the
    findings of its run's checks (``{"code", "severity", "message", "values"}``) and plain details."""

    bounds: list
    status: str | None
    p_value: float | None
    ceiling: float | None
    findings: list
    details: dict = field(default_factory=dict)


def bound_dict(bound, threat_model: str, assumptions: str = "") -> dict:
    """An ``EpsilonBound`` of ``attacks.estimators.estimate_one_run`` as a one-run probe's bound:
    ``{"threat_model", "method", "epsilon", "confidence", "rigorous", "assumptions", "details"}`` (its numeric
    details only: the canaries, guesses and correct guesses ``one_run_decision`` reads among them)."""
    return {"threat_model": threat_model, "method": bound.method, "epsilon": bound.epsilon,
            "confidence": bound.confidence, "rigorous": bound.rigorous,
            "assumptions": bound.assumptions + (" " + assumptions if assumptions else ""),
            "details": {k: v for k, v in bound.details.items() if isinstance(v, (int, float))}}


def claim_p_value(bound: dict, epsilon: float, delta: float) -> float:
    """One rigorous bound's p-value of "(epsilon, delta)-DP": the one it computed for the claim (``one-run-weighted``,
    whose test needs its weights), else Steinke et al.'s from its counts."""
    from attacks.estimators.one_run import one_run_p_value

    d = bound["details"]
    if "claim_p_value" in d:
        if d.get("claim_epsilon") != epsilon:
            raise ValueError(f"{bound['method']} tested the claim {d.get('claim_epsilon')}, not {epsilon}")
        return float(d["claim_p_value"])
    p = one_run_p_value(epsilon, delta, d["canaries"], d["guesses"], d["correct"])
    return min(1.0, p * d.get("corrected_for", 1))


def one_run_decision(bounds: list[dict], canaries: int, epsilon: float, delta: float, confidence: float):
    """(status, p-value, ceiling) of the rigorous bounds against the claim ``(epsilon, delta)``: VIOLATION when
    the Bonferroni-combined p-value of "(epsilon, delta)-DP" is at most ``1 - confidence``; the ceiling is the
    most any of them can certify at its share of ``1 - confidence``."""
    from attacks.estimators.one_run import one_run_ceiling
    from attacks.estimators.one_run_weighted import one_run_weighted_ceiling

    rigorous = [b for b in bounds if b["rigorous"]]
    p_values = [claim_p_value(b, epsilon, delta) for b in rigorous]
    p_value = min(1.0, len(p_values) * min(p_values)) if p_values else None
    share = 1 - (1 - confidence) / max(1, len(rigorous))
    ceiling = one_run_ceiling(canaries, delta, share)
    if any(b["method"] == "one-run-weighted" for b in rigorous):
        ceiling = max(ceiling, one_run_weighted_ceiling(canaries, delta, share))
    if p_value is not None and p_value <= 1.0 - confidence:
        return "VIOLATION", p_value, ceiling
    return ("INCONCLUSIVE" if ceiling <= epsilon else "PASS"), p_value, ceiling


def minimum_canaries(delta: float, confidence: float, threat_models: int = 1, largest: int = 4096) -> int:
    """The fewest canaries with which the rigorous one-run bound (at ``confidence`` split over ``threat_models``,
    Bonferroni) can exceed 0 when every guess is right."""
    from attacks.estimators.one_run import one_run_ceiling

    per_model = 1.0 - (1.0 - confidence) / threat_models
    low, high = 1, largest
    if one_run_ceiling(high, delta, per_model) <= 0:
        return largest + 1
    while low < high:  # the ceiling grows with the canaries
        middle = (low + high) // 2
        low, high = (middle + 1, high) if one_run_ceiling(middle, delta, per_model) <= 0 else (low, middle)
    return low


def check_canary_count(canaries: int, delta: float, confidence: float, threat_models: int = 1,
                       field: str = "canaries") -> None:
    """Refuse, before any run, a number of canaries (other than 0) with which no one-run bound can exceed 0."""
    from accounting.errors import ConfigurationError

    if canaries and canaries < (least := minimum_canaries(delta, confidence, threat_models)):
        raise ConfigurationError(field, f"{canaries} canaries are too few for the one-run estimators: even with "
                                 f"every sign guessed right their bound is 0 at confidence {confidence:g} and delta "
                                 f"{delta:g}; use at least {least} (or 0 for no canaries)")


def canaries_to_test(epsilon: float, delta: float, confidence: float, threat_models: int = 1,
                     largest: int = 100_000) -> dict:
    """How many canaries the rigorous one-run bound (Steinke et al.'s, at ``confidence`` split over
    ``threat_models``) needs before its ceiling, the most it can certify with every sign guessed right, exceeds
    ``epsilon``: ``{"least": count or None, "peak": the largest ceiling seen, "at": its count}``. The ceiling does
    not grow without end (at delta 1e-5 and 97.5% it peaks near 5, at about 1850 canaries), so a large claim may be
    out of any count's reach (``least`` None). Counts up to ``largest``, on a geometric grid refined by bisection."""
    from attacks.estimators.one_run import one_run_ceiling

    share = 1.0 - (1.0 - confidence) / threat_models
    grid, count = [], 8
    while count <= largest:
        grid.append(count)
        count = int(count * 1.5) + 1
    ceilings = {k: one_run_ceiling(k, delta, share) for k in grid}
    peak_at = max(ceilings, key=ceilings.get)
    above = [k for k in grid if ceilings[k] > epsilon]
    if not above:
        return {"least": None, "peak": ceilings[peak_at], "at": peak_at}
    high = above[0]
    low = max([k for k in grid if k < high] or [1])
    while high - low > 1:  # the ceiling rises up to its peak: bisect between the last count below and the first above
        middle = (low + high) // 2
        low, high = (low, middle) if one_run_ceiling(middle, delta, share) > epsilon else (middle, high)
    return {"least": high, "peak": ceilings[peak_at], "at": peak_at}


__all__ = ["OneRunOutcome", "bound_dict", "canaries_to_test", "check_canary_count", "minimum_canaries",
           "claim_p_value", "one_run_decision"]
