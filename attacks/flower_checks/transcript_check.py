"""Check recorded DP releases (``dpfed.flower.records``) against what the accountant assumed
(``attacks.flower_checks.assumptions.Assumptions``).

Checks, each a finding code (critical where the deviation can raise epsilon above the accounted one):

- ``release-count``, ``population``, ``sampling-scheme``, ``dropouts``, ``unequal-weights``, ``clip``: the
  recorded counts, sizes, weights and clip against the assumed ones (deterministic; ``clip`` for fixed
  clipping only: an adaptive run's clip changes by design and its noise is checked against it);
- ``noise-below-accounted`` / ``noise-not-finite``: each round's noise std, chi-square lower tail at
  alpha / rounds (the std expected: z C / m, or z_u C_t / m with an adaptive round's own clip);
- ``reply-above-clip`` (a), ``noise-correlated`` (b), ``noise-part-below-accounted`` (c),
  ``adaptive-noise-below-clip`` (e): ``attacks.flower_checks.release_checks``;
- ``sampler-not-uniform`` / ``sampler-not-independent`` (d): ``attacks.flower_checks.sampler_check``.

Each statistical check kind is a test at level ``alpha`` (Bonferroni over what it repeats over): per-round
noise, correlation, noise parts, sampler, and the Poisson total, so a correct run raises a false finding with
probability at most ``alpha`` per kind and ``5 alpha`` in all; the deterministic ones never fire on a correct
run. Every finding states its false-alarm probability in ``values["false_alarm"]`` (0 for the deterministic
ones).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from accounting.errors import require_number
from attacks.flower_checks.assumptions import Assumptions, assumptions_from_config
from attacks.flower_checks.findings import FlowerFinding
from attacks.flower_checks.release_checks import (
    check_adaptive_order,
    check_noise_correlation,
    check_noise_parts,
    check_reply_norms,
)
from attacks.flower_checks.sampler_check import check_sampler
from dpfed.flower.records import releases

RELATIVE = 1e-6  # float tolerance for equal weights and equal clipping norms
STATISTICAL_KINDS = 5  # per-round noise, correlation, noise parts, sampler, Poisson total


def check_count(records, a: Assumptions) -> list:
    if len(records) == a.releases:
        return []
    severity = "critical" if len(records) > a.releases else "medium"
    return [FlowerFinding("release-count", severity, f"{len(records)} releases recorded, {a.releases} accounted",
                          {"recorded": len(records), "accounted": a.releases, "false_alarm": 0.0})]


def check_weights(records, a: Assumptions) -> list:
    findings = []
    for round_, p in records:
        weights = np.asarray(p["weights"], dtype=float)
        if len(p["replies"]) != len(p["sampled"]):
            findings.append(FlowerFinding("dropouts", "medium", f"round {round_}: {len(p['replies'])} replies of "
                                          f"{len(p['sampled'])} sampled", {"round": round_, "false_alarm": 0.0}))
        if weights.size and weights.max() > (1 + RELATIVE) / a.sampled:
            effective = a.noise_multiplier / (a.sampled * weights.max())
            findings.append(FlowerFinding("unequal-weights", "critical", f"round {round_}: largest weight "
                                          f"{weights.max():.4g} > 1/m = {1 / a.sampled:.4g}; effective noise "
                                          f"multiplier {effective:.4g} instead of {a.noise_multiplier:g}",
                                          {"round": round_, "max_weight": float(weights.max()),
                                           "effective_noise_multiplier": effective, "false_alarm": 0.0}))
        if not a.adaptive and p["clip"] > a.clip * (1 + RELATIVE):
            findings.append(FlowerFinding("clip", "critical", f"round {round_}: clipping norm {p['clip']:g} above the "
                                          f"accounted {a.clip:g}", {"round": round_, "clip": p["clip"],
                                                                           "false_alarm": 0.0}))
    return findings


def check_noise(records, a: Assumptions, alpha: float) -> list:
    """Lower-tail chi-square test per round at alpha / rounds: sum(noise^2) / sigma^2 ~ chi2(d) if the std is
    as accounted (``Assumptions.round_noise_std``)."""
    findings = []
    for round_, p in records:
        noise = np.asarray(p["noise"], dtype=float)
        if not np.all(np.isfinite(noise)):  # nan compares false: the test below would pass it
            findings.append(FlowerFinding("noise-not-finite", "critical", f"round {round_}: "
                                          f"{int(np.sum(~np.isfinite(noise)))} of {noise.size} noise coordinates are "
                                          "not finite (an overflow?): the release is not the accounted Gaussian",
                                          {"round": round_, "false_alarm": 0.0}))
            continue
        expected = a.round_noise_std(p)
        statistic = float(np.sum(noise ** 2) / expected ** 2)
        p_value = float(stats.chi2.cdf(statistic, df=noise.size))
        if p_value < alpha / len(records):
            findings.append(FlowerFinding("noise-below-accounted", "critical", f"round {round_}: noise std "
                                          f"{p['noise_std']:.4g} below the accounted z*C/m = {expected:.4g} "
                                          f"(ratio {p['noise_std'] / expected:.3f}, p = {p_value:.2g})",
                                          {"round": round_, "noise_std": p["noise_std"], "accounted": expected,
                                           "p_value": p_value, "false_alarm": alpha}))
    return findings


def check_transcript(transcript, assumptions: Assumptions, alpha: float = 1e-3) -> list:
    """All findings of a transcript against ``assumptions`` (empty: the run matches the accountant)."""
    require_number("alpha", alpha, low=0, high=1, low_open=True, high_open=True)
    records = releases(transcript)
    if not records:
        return [FlowerFinding("no-releases", "critical", "the transcript holds no DP release records", {})]
    a = assumptions
    return (check_count(records, a) + check_sampler(records, a, alpha) + check_weights(records, a)
            + check_reply_norms(records, a) + check_noise(records, a, alpha) + check_noise_correlation(records, alpha)
            + check_noise_parts(records, a, alpha) + check_adaptive_order(records, a))


POWER_PROBABILITY = 0.9


def checks_made(records, a: Assumptions) -> list[str]:
    """The check kinds ``check_transcript`` could make on ``records`` (the others need what these lack)."""
    made = ["release count", "sample sizes", "sampler", "weights"] + ([] if a.adaptive else ["clip"])
    if any(p.get("clipping") == "client" and "norms" in p for _, p in records):
        made.append("reply norms")
    made += ["noise per round", "noise per tensor and block"]
    made += ["noise across rounds"] if len(records) > 1 else []
    return made + (["adaptive clip order"] if a.adaptive else [])


def noise_power(records, alpha: float, probability: float = POWER_PROBABILITY) -> dict | None:
    """What each round's noise test can refute (as ``opacus-check``'s power line): with the fewest coordinates a
    round released, the largest ratio r of the accounted std such that noise r z C / m is refuted with
    ``probability`` (closed form: the statistic is r^2 chi2(d), refuted below chi2(d)'s ``alpha / rounds``
    quantile). Noise above r of the accounted is likely to pass unseen."""
    sizes = [len(p["noise"]) for _, p in records if len(p["noise"])]
    if not sizes:
        return None
    d = min(sizes)
    threshold = stats.chi2.ppf(alpha / len(records), df=d)
    return {"coordinates": d, "rounds": len(records), "probability": probability, "false_alarm": alpha,
            "refuted_ratio": float(np.sqrt(threshold / stats.chi2.ppf(probability, df=d)))}


def transcript_summary(transcript, assumptions: Assumptions, findings: list, alpha: float = 1e-3) -> dict:
    """What the transcript check looked at: the rounds, the check kinds made, how many findings it raised, and
    the power of its per-round noise test (``noise_power``)."""
    records = releases(transcript)
    return {"rounds": len(records), "checks": checks_made(records, assumptions), "findings": len(findings),
            "alpha": alpha, "power": noise_power(records, alpha) if records else None}


__all__ = ["Assumptions", "assumptions_from_config", "check_transcript", "transcript_summary"]
