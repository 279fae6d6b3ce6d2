"""Sample-level DP inside Flower clients (opacus in the ClientApp), checked from what each client ran.

Input: the client observations of one run (``dpfed.flower.client_observer`` records: per real client and
message, what opacus ran). Per client (node) it composes every private step it took, in every round, into one
epsilon: each step a Poisson-subsampled Gaussian of multiplier z at the rate opacus's accountant is given,
add/remove, composed by our ``pld`` accountant (tight up to discretisation) and, beside it, by opacus's RDP
accountant over the same history. Findings:

- ``per-round-accounting``: the client's engine at its last round counts fewer steps than the client took over
  the run (a ``PrivacyEngine`` made afresh each round: its epsilon ignores the earlier rounds, while the client's
  data was used in every one); critical unless the user's claim covers the composed epsilon (then medium);
- ``understated-client-epsilon`` (critical): the claim (the user's, else the last epsilon the client's code asked
  its engine for) is below the composed epsilon by more than ``TOLERANCE`` (the PLD's discretisation is far
  finer); ``unproven-client-epsilon`` (medium) within it;
- ``client-noise-below-accounted`` (critical): the noise opacus's optimizer added (measured as the noisy minus
  the clipped sum of gradients, over every coordinate of every step) is below z C, by a lower-tail chi-square test
  at ``alpha`` split over the tests (Bonferroni); the ratio gives the effective multiplier;
- ``client-without-dp`` (critical): a client answered a training message without a private step while others
  trained privately;
- ``not-poisson`` (medium): ``make_private(poisson_sampling=False)``: the accountant's Poisson analysis does not
  hold for shuffled batches.
"""

from __future__ import annotations

from collections import defaultdict

from attacks.flower_checks.findings import FlowerFinding
from attacks.opacus_checks.epsilons import steps_epsilon as composed_epsilon
from attacks.opacus_checks.observed import TOLERANCE, claim_severity
from attacks.opacus_checks.observed_canaries import canary_findings, canary_result
from attacks.opacus_checks.observed_noise import measured_noise, noise_test


def _trained(record) -> bool:
    return str(record["message_type"]).startswith("train")


def _steps(record) -> list[dict]:
    return (record.get("opacus") or {}).get("steps", [])


def _counted_steps(record) -> int:
    """Steps the accountants of the engines this record's client stepped with count (at the end of the call)."""
    opacus = record.get("opacus") or {}
    used = {s["engine"] for s in opacus.get("steps", [])} or set(opacus.get("accountants", {}))
    return sum(int(n) for key in used for _, _, n in opacus.get("accountants", {}).get(key, {}).get("history", []))


def client_rows(records: list[dict], delta: float) -> dict:
    """``{node id: row}`` for every real client that took a private step: its partition, rounds trained, steps,
    noise multipliers, composed epsilons, the steps its last engine counts and the epsilon it last reported."""
    by_node = defaultdict(list)
    for record in records:
        by_node[int(record["node_id"])].append(record)
    rows = {}
    for node, own in sorted(by_node.items()):
        steps = [s for r in own for s in _steps(r)]
        if not steps:
            continue
        rounds = sorted({r["round"] for r in own if _steps(r) and r["round"] is not None})
        last = [r for r in own if _steps(r)][-1]
        reported = [e for r in own for e in (r.get("opacus") or {}).get("epsilons", [])]
        composed = composed_epsilon(steps, delta)
        rows[node] = {"partition": own[0]["partition_id"], "rounds": rounds, "training_calls": sum(map(_trained, own)),
                      "steps": composed["steps"], "noise_multipliers": sorted({s["noise_multiplier"] for s in steps}),
                      "clips": sorted({s["clip"] for s in steps if s["clip"] is not None}),
                      "sample_rates": sorted({s["sample_rate"] for s in steps if s["sample_rate"] is not None}),
                      "engines": len({s["engine"] for s in steps}), "counted_steps": _counted_steps(last),
                      "reported_epsilon": reported[-1]["epsilon"] if reported else None,
                      "reported_delta": reported[-1]["delta"] if reported else None,
                      "composed_epsilon": composed["pld"], "composed_opacus_rdp": composed["opacus_rdp"]}
    return rows


def _claim_findings(node, row, claimed_epsilon) -> list:
    claim = claimed_epsilon if claimed_epsilon is not None else row["reported_epsilon"]
    if claim is None:
        return []
    source = "the claimed epsilon" if claimed_epsilon is not None else "the epsilon the client reported"
    values = {"node": node, "partition": row["partition"], "claimed_epsilon": claim,
              "composed_epsilon": row["composed_epsilon"], "rounds": len(row["rounds"]), "steps": row["steps"]}
    where = f"client {node} (partition {row['partition']})"
    severity = claim_severity(claim, row["composed_epsilon"])
    if severity == "critical":
        return [FlowerFinding("understated-client-epsilon", "critical",
                              f"{where}: {source} {claim:.4g} is below the epsilon of the {row['steps']} private steps "
                              f"it took over {len(row['rounds'])} round(s), {row['composed_epsilon']:.4g} (pld; "
                              f"opacus's RDP {row['composed_opacus_rdp']:.4g})", values)]
    if severity == "medium":
        return [FlowerFinding("unproven-client-epsilon", "medium",
                              f"{where}: {source} {claim:.4g} is within {TOLERANCE:.0%} below the composed epsilon "
                              f"{row['composed_epsilon']:.4g}", values)]
    return []


def _accounting_finding(node, row, claimed_epsilon) -> list:
    """Critical when the figure the client reports is what is claimed (no user claim) or the user's claim is below
    the composed epsilon too; medium when the user's claim covers the composition (the clients' own figures are
    still wrong)."""
    if row["counted_steps"] >= row["steps"] or len(row["rounds"]) < 2:
        return []
    covered = claimed_epsilon is not None and claimed_epsilon >= row["composed_epsilon"]
    tail = (f"; the claimed epsilon {claimed_epsilon:.4g} covers it" if covered else "")
    return [FlowerFinding("per-round-accounting", "medium" if covered else "critical",
                          f"client {node} (partition {row['partition']}) trained in {len(row['rounds'])} rounds "
                          f"({row['steps']} private steps) but the PrivacyEngine it reports from counts "
                          f"{row['counted_steps']}: a fresh engine each round, whose epsilon "
                          f"({_text(row['reported_epsilon'])}) ignores the earlier rounds; composed over all its "
                          f"rounds "
                          f"epsilon is {row['composed_epsilon']:.4g} (pld; opacus's RDP "
                          f"{row['composed_opacus_rdp']:.4g}){tail}",
                          {"node": node, "partition": row["partition"], "steps": row["steps"],
                           "counted_steps": row["counted_steps"], "reported_epsilon": row["reported_epsilon"],
                           "composed_epsilon": row["composed_epsilon"]})]


def _text(value) -> str:
    return "none reported" if value is None else f"{value:.4g}"


def noise_findings(records: list[dict], alpha: float) -> list:
    """Lower-tail chi-square test of the measured noise of each (client call, noise std): sum of squares / (z C)^2
    ~ chi2(count) when the noise is as opacus describes it; alpha split over all the tests."""
    tests = [(r, n) for r in records for n in measured_noise((r.get("opacus") or {}).get("noise", []))]
    findings = []
    for record, noise in tests:
        p_value, ratio = noise_test(noise)
        if p_value < alpha / len(tests):
            findings.append(FlowerFinding(
                "client-noise-below-accounted", "critical",
                f"client {record['node_id']} (partition {record['partition_id']}), round {record['round']}: opacus's "
                f"optimizer added noise of std {ratio:.3f} x z C (p = {p_value:.2g} over {noise['count']} "
                f"coordinates): the effective noise multiplier is {ratio:.3f} of the one accounted",
                {"node": record["node_id"], "round": record["round"], "ratio": ratio, "p_value": p_value,
                 "false_alarm": alpha}))
    return findings


def client_dp_findings(records: list[dict], delta: float, claimed_epsilon: float | None = None,
                       alpha: float = 1e-3) -> dict:
    """``{"rows", "findings"}`` for the clients' own DP; empty when no client took a private step."""
    rows = client_rows(records, delta)
    if not rows:
        return {"rows": {}, "findings": []}
    findings = []
    for node, row in rows.items():
        findings += _accounting_finding(node, row, claimed_epsilon) + _claim_findings(node, row, claimed_epsilon)
    findings += noise_findings(records, alpha) + client_canary_findings(records, rows, claimed_epsilon, delta)
    private = set(rows)
    bare = sorted({int(r["node_id"]) for r in records if _trained(r) and not _steps(r)} - private)
    if bare:
        findings.append(FlowerFinding("client-without-dp", "critical",
                                      f"{len(bare)} client(s) answered training requests without a private step while "
                                      f"{len(private)} trained with opacus (nodes {bare[:5]})", {"nodes": bare}))
    if any(not e["poisson"] for r in records for e in (r.get("opacus") or {}).get("engines_made", [])):
        findings.append(FlowerFinding("not-poisson", "medium",
                                      "make_private(poisson_sampling=False): batches are not Poisson-sampled, so the "
                                      "accountant's amplification by sampling does not hold as computed", {}))
    worst = max(rows.values(), key=lambda r: r["composed_epsilon"])
    findings.append(FlowerFinding("client-epsilons", "info",
                                  f"{len(rows)} client(s) trained with opacus; composed over their rounds, the largest "
                                  f"epsilon is {worst['composed_epsilon']:.4g} at delta {delta:g} (partition "
                                  f"{worst['partition']}, {worst['steps']} steps, noise multipliers "
                                  f"{worst['noise_multipliers']})",
                                  {"largest_epsilon": worst["composed_epsilon"], "clients": len(rows)}))
    return {"rows": rows, "findings": findings}


def client_canary_findings(records: list[dict], rows: dict, claimed_epsilon, delta: float,
                           confidence: float = 0.95) -> list:
    """Per client, the one-run bound of the gradient canaries that joined its private steps in every round (each
    canary's log-likelihood-ratio scores summed over the rounds: the releases compose); critical where the rigorous
    bound exceeds the client's claim (``claimed_epsilon``, else the epsilon it reported)."""
    import numpy as np

    refused = next((r["canaries"]["refusal"] for r in records if "refusal" in (r.get("canaries") or {})), None)
    if refused is not None:
        from accounting.errors import ConfigurationError

        raise ConfigurationError("client-canaries", f"{refused} (Flower had started the app)")
    out = []
    for node, row in rows.items():
        own = [r["canaries"] for r in records if int(r["node_id"]) == node and r.get("canaries")]
        if not own:
            continue
        claim = claimed_epsilon if claimed_epsilon is not None else row["reported_epsilon"]
        result = canary_result(np.sum([c["scores"] for c in own], axis=0), own[0]["included"],
                               sum(c["steps"] for c in own), claim, delta, confidence,
                               "all iterates (white box), one run, through the client's optimizer")
        row["canary_bound"] = max((b["epsilon"] for b in result["bounds"] if b["rigorous"]), default=0.0)
        for finding in canary_findings(result, claim):
            finding.values.update(node=node, partition=row["partition"])
            out.append(FlowerFinding(f"client-{finding.code}", finding.severity,
                                     f"client {node} (partition {row['partition']}): {finding.message}",
                                     dict(finding.values)))
    return out
