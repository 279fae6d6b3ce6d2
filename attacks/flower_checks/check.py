"""Configuration check of a Flower DP setting: what Flower runs against what is claimed, as findings.

Each finding states the corrected epsilon (what Flower runs, accounted by our accountants: an upper bound)
and what Flower's sampler provably spends (the replace-one pair it realises: a lower bound) beside the
claimed one. A claim below the lower bound understates the privacy loss (critical); one between the two
cannot be confirmed (medium); one above the upper bound is merely loose, or made under another
neighbouring relation (low).
"""

from __future__ import annotations

from accounting.calibration import check_classic_calibration
from accounting.errors import require_number
from attacks.flower_checks.adaptive_count import count_noise_finding
from attacks.flower_checks.findings import FlowerFinding
from dpfed.flower.config import CENTRAL_KINDS, CLAIMS, FlowerDpConfig, accounted_rows, parse_claims

CLAIM_WORDS = {
    "no-amplification": "Flower's accountant (no amplification, add/remove)",
    "poisson": "Poisson sampling at rate m/N",
    "z-unchanged": "replace-one with z passed unchanged (sensitivity C instead of 2C)",
}


def claim_finding(name: str, claimed: float, lower: float, upper: float) -> FlowerFinding:
    """Finding for one claim against what Flower runs: provably spent ``lower`` (the replace-one pair its
    sampler realises) and at most ``upper`` (our RDP accountant)."""
    values = {"claim": name, "claimed_epsilon": claimed, "corrected_epsilon": upper, "realised_epsilon": lower}
    if claimed < lower:
        return FlowerFinding(f"understated-{name}", "critical",
                             f"{CLAIM_WORDS[name]} gives epsilon {claimed:.3g}, but Flower samples fixed-size without "
                             f"replacement (replace-one, sensitivity 2C) and so spends at least {lower:.3g} (a pair "
                             f"its sampler realises); corrected epsilon {upper:.3g}", values)
    if claimed < upper:
        return FlowerFinding(f"unproven-{name}", "medium",
                             f"{CLAIM_WORDS[name]} gives epsilon {claimed:.3g}: between what Flower's sampler provably "
                             f"spends ({lower:.3g}) and our upper bound ({upper:.3g}); it cannot be confirmed", values)
    return FlowerFinding(f"loose-{name}", "low",
                         f"{CLAIM_WORDS[name]} gives epsilon {claimed:.3g}; what Flower runs accounts to "
                         f"{upper:.3g} (under replace-one)", values)


def user_claim_findings(claimed: float, lower: float, upper: float) -> list:
    """The user's own epsilon against what Flower's sampler provably spends (``lower``) and our upper bound:
    critical below the first, medium between the two, nothing above the second."""
    values = {"claimed_epsilon": claimed, "corrected_epsilon": upper, "realised_epsilon": lower}
    if claimed < lower:
        return [FlowerFinding("understated-user-claim", "critical",
                              f"the claimed epsilon {claimed:.3g} is below what Flower's sampler provably spends "
                              f"({lower:.3g}; corrected {upper:.3g})", values)]
    if claimed < upper:
        return [FlowerFinding("unproven-user-claim", "medium",
                              f"the claimed epsilon {claimed:.3g} lies between what Flower's sampler provably spends "
                              f"({lower:.3g}) and our upper bound ({upper:.3g})", values)]
    return []


def central_findings(config: FlowerDpConfig, delta: float, configured_m: int | None, claimed_epsilon,
                     claims=CLAIMS) -> list:
    """Findings for the ``claims`` made (e.g. only Flower's accountant's), the user's epsilon, the sample
    size the noise is calibrated for, and the weighting."""
    rows = accounted_rows(config, delta)
    corrected, realised = rows["runs"]["epsilon"], rows["worst-pair"]["epsilon"]
    claims = parse_claims(claims)
    findings = [claim_finding(name, rows[name]["epsilon"], realised, corrected) for name in claims]
    if claimed_epsilon is not None:
        claimed = require_number("claimed_epsilon", claimed_epsilon, low=0, low_open=True)
        findings += user_claim_findings(claimed, realised, corrected)
    if configured_m is not None and configured_m != config.sampled:
        severity = "critical" if configured_m > config.sampled else "medium"
        findings.append(FlowerFinding("sample-size-mismatch", severity,
                                      f"noise is calibrated for num_sampled_clients={configured_m} but Flower samples "
                                      f"{config.sampled} of {config.nodes} nodes; the effective multiplier is "
                                      f"z * {config.sampled}/{configured_m}",
                                      {"configured": configured_m, "sampled": config.sampled}))
    if config.weighting == "examples":
        findings.append(FlowerFinding("weighted-by-examples", "medium",
                                      "FedAvg weights by reported example counts; the noise z*C/m is calibrated for "
                                      "equal weights 1/m, so the accounting holds only if every client reports the "
                                      "same count (check the transcript)", {"weighting": config.weighting}))
    if config.kind.endswith("adaptive"):
        findings.append(FlowerFinding("adaptive-clip", "info",
                                      "adaptive clipping: accounted at the configured multiplier; the clip norm "
                                      "changes every round (the transcript records it)", {}))
        count = count_noise_finding(config, delta, claims)
        findings += [count] if count is not None else []
    return findings


def local_findings(config: FlowerDpConfig) -> list:
    """LocalDpMod calibrates with the classic formula, proven only for epsilon < 1: flag it where it misses
    its delta (exact Gaussian profile: critical), or lies outside the proven range (low)."""
    check = check_classic_calibration(config.local_epsilon, config.local_delta)
    if check.violated:
        return [FlowerFinding("classic-calibration", "critical",
                              f"LocalDpMod's classic Gaussian calibration at epsilon {check.epsilon:g} really gives "
                              f"delta {check.true_delta:.3g} > {check.delta:g}; the analytic multiplier is "
                              f"{check.analytic_noise_multiplier:.4g} (classic {check.noise_multiplier:.4g})",
                              check.to_dict())]
    if check.epsilon > 1.0:
        return [FlowerFinding("classic-out-of-range", "low",
                              f"LocalDpMod's classic calibration is proven only for epsilon < 1; at {check.epsilon:g} "
                              f"the exact profile still meets delta ({check.true_delta:.3g} <= {check.delta:g})",
                              check.to_dict())]
    return []


def check_config(config: FlowerDpConfig, delta: float, configured_m: int | None = None,
                 claimed_epsilon: float | None = None, claims=CLAIMS) -> dict:
    """``{"rows": accounted rows or {}, "findings": [FlowerFinding]}`` for one setting; ``claims``: which
    of ``CLAIMS`` the user (or Flower's accountant) makes."""
    if config.kind in CENTRAL_KINDS:
        return {"rows": accounted_rows(config, delta),
                "findings": central_findings(config, delta, configured_m, claimed_epsilon, claims)}
    return {"rows": {}, "findings": local_findings(config)}
