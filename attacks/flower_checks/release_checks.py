"""Checks of the recorded releases that real apps get wrong: replies above the clip, noise repeated across
rounds, parts of the model released with less noise, and an adaptive clip updated before its noise.

Each check reads ``dpfed.flower.records`` payloads and returns findings. The statistical ones are tests at
level ``alpha`` (Bonferroni over what they repeat over), so on a correct run each raises a false finding with
probability at most ``alpha``; the deterministic ones compare recorded numbers and, beyond float32 rounding
(which they allow for), never fire on a correct run (false-alarm probability 0). Every finding states its
false-alarm probability in ``values["false_alarm"]``.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from attacks.flower_checks.assumptions import Assumptions
from attacks.flower_checks.findings import FlowerFinding

BLOCK = 32  # coordinates per block of the per-block noise test (blocks do not cross tensors)
RELATIVE = 1e-9  # float tolerance for "the noise's clip is below the clipping clip"


def check_reply_norms(records, a: Assumptions) -> list:
    """(a) Client-side clipping: every reply's update norm, as it arrived and before any clipping of ours, must
    be at most the clip of its round (plus its float32 slack). A reply above it has a sensitivity the accountant
    did not assume: one finding naming the largest excess. Deterministic: false-alarm probability 0."""
    over = []
    for round_, p in records:
        if p.get("clipping") != "client" or "norms" not in p:
            continue
        slack = p.get("norm_slack", [0.0] * len(p["norms"]))
        for node, norm, extra in zip(p["replies"], p["norms"], slack, strict=True):
            if norm > p["clip"] + extra:
                over.append((norm / p["clip"], round_, node, norm, p["clip"]))
    if not over:
        return []
    ratio, round_, node, norm, clip = max(over)
    nodes = sorted({o[2] for o in over})
    effective = a.noise_multiplier / ratio
    return [FlowerFinding("reply-above-clip", "critical",
                          f"{len(over)} replies from {len(nodes)} clients have update norms above the clip the "
                          f"accounting assumes (largest {norm:.4g} against C = {clip:.4g} in round {round_}, "
                          f"{ratio:.3g} x): client-side clipping is missing or wrong there; their sensitivity is "
                          f"{ratio:.3g} C, an effective noise multiplier {effective:.4g} instead of "
                          f"{a.noise_multiplier:g}",
                          {"replies_over": len(over), "clients_over": len(nodes), "nodes": nodes[:20],
                           "round": round_, "largest_norm": norm, "clip": clip, "ratio": ratio,
                           "effective_noise_multiplier": effective, "false_alarm": 0.0})]


def noise_vectors(records) -> list[tuple[int, np.ndarray]]:
    return [(r, np.asarray(p["noise"], dtype=float)) for r, p in records
            if np.all(np.isfinite(p["noise"])) and np.any(np.asarray(p["noise"]) != 0)]


def check_noise_correlation(records, alpha: float) -> list:
    """(b) Noise that repeats or correlates across rounds. For independent Gaussian noise vectors of iid
    coordinates in d dimensions, the cosine r of two rounds' noise is that of a uniformly random unit vector:
    (r + 1) / 2 ~ Beta((d-1)/2, (d-1)/2) exactly. Two-sided test of every pair of rounds at alpha / pairs
    (Bonferroni): false-alarm probability at most ``alpha``. Rounds without noise (flagged by the noise check)
    are left out."""
    vectors = noise_vectors(records)
    pairs = len(vectors) * (len(vectors) - 1) // 2
    if pairs == 0:
        return []
    dim = vectors[0][1].size
    if any(v.size != dim for _, v in vectors) or dim < 2:
        return []
    units = np.stack([v / np.linalg.norm(v) for _, v in vectors])
    cos = np.clip(units @ units.T, -1.0, 1.0)
    upper = np.triu_indices(len(vectors), k=1)
    r = cos[upper]
    half = (dim - 1) / 2.0
    p_values = 2.0 * np.minimum(stats.beta.cdf((r + 1) / 2, half, half), stats.beta.sf((r + 1) / 2, half, half))
    flagged = p_values < alpha / pairs
    if not np.any(flagged):
        return []
    worst = int(np.argmax(np.abs(r)))
    first, second = vectors[upper[0][worst]][0], vectors[upper[1][worst]][0]
    return [FlowerFinding("noise-correlated", "critical",
                          f"the noise of rounds {first} and {second} has correlation {r[worst]:.3f} (independent "
                          f"noise in {dim} dimensions: about +-{1 / np.sqrt(dim):.2g}); {int(flagged.sum())} of "
                          f"{pairs} pairs of rounds correlate beyond chance (p < {alpha / pairs:.2g}): the noise "
                          "repeats or is shared across rounds, so releases are not independent and averaging them "
                          "removes it",
                          {"rounds": [first, second], "correlation": float(r[worst]),
                           "p_value": float(p_values[worst]), "pairs_flagged": int(flagged.sum()), "pairs": pairs,
                           "dim": dim, "false_alarm": alpha})]


def parts_of(payload: dict) -> list[tuple[str, int, int]]:
    """``(name, start, stop)`` of every released tensor and of every block of ``BLOCK`` coordinates in it."""
    tensors = payload.get("tensors") or [["all", len(payload["noise"])]]
    parts, start = [], 0
    for name, size in tensors:
        parts.append((f"tensor {name}", start, start + size))
        if size > BLOCK:
            for low in range(start, start + size, BLOCK):
                parts.append((f"block {name}[{low - start}:{min(low + BLOCK, start + size) - start}]", low,
                              min(low + BLOCK, start + size)))
        start += size
    return parts


def check_noise_parts(records, a: Assumptions, alpha: float) -> list:
    """(c) Parameters released with less noise than the rest. For every tensor and every block of ``BLOCK``
    coordinates in it, pooled over the rounds: sum of (noise / round's std)^2 ~ chi2(rounds x size) if each
    coordinate got the accounted std; lower tail at alpha / parts (Bonferroni over tensors and blocks):
    false-alarm probability at most ``alpha``. At most two findings: the tensors below, the blocks below."""
    usable = [(r, p) for r, p in records if np.all(np.isfinite(p["noise"])) and np.any(np.asarray(p["noise"]) != 0)]
    if not usable:  # rounds without noise, or with non-finite noise, are the per-round check's findings
        return []
    dim = len(usable[0][1]["noise"])
    usable = [(r, p) for r, p in usable if len(p["noise"]) == dim]
    layout = parts_of(usable[0][1])
    scaled = np.stack([np.asarray(p["noise"], float) / a.round_noise_std(p) for _, p in usable])
    below = []
    for name, low, high in layout:
        block = scaled[:, low:high]
        statistic, dof = float(np.sum(block ** 2)), block.size
        p_value = float(stats.chi2.cdf(statistic, df=dof))
        if p_value < alpha / len(layout):
            below.append({"part": name, "start": low, "stop": high, "std_ratio": float(np.sqrt(statistic / dof)),
                          "p_value": p_value})
    findings = []
    for kind in ("tensor", "block"):
        found = sorted((b for b in below if b["part"].startswith(kind)), key=lambda b: b["std_ratio"])
        if not found:
            continue
        low = found[0]
        names = ", ".join(f"{b['part'].split(' ', 1)[1]} ({b['std_ratio']:.3g})" for b in found[:5])
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""
        findings.append(FlowerFinding("noise-part-below-accounted", "critical",
                                      f"{len(found)} {kind}s got less noise than the accounted std over "
                                      f"{len(usable)} rounds (std ratio in brackets): {names}{more}; lowest p = "
                                      f"{low['p_value']:.2g} < {alpha / len(layout):.2g}: those parameters are "
                                      "released with less noise than the accountant assumes",
                                      {**low, "kind": kind, "parts_below": [b["part"] for b in found[:20]],
                                       "count": len(found), "parts_tested": len(layout), "false_alarm": alpha}))
    return findings


def check_adaptive_order(records, a: Assumptions) -> list:
    """(e) Adaptive clipping: in round t the updates are clipped to the round's clip C_t but the noise may be
    scaled with another clip (Flower 1.42's adaptive wrappers update the clip to C_{t+1} from the noisy clipped
    count and then add noise of std z_u C_{t+1} / m). Where C_{t+1} < C_t the round's update noise multiplier
    is z_u C_{t+1} / C_t, below the accounted one; the run's epsilon at those realised multipliers (combined
    with the count's noise, same accountant) is compared with the claim (``Assumptions.claim``): critical above
    it, medium within it.
    Deterministic given the recorded clips: false-alarm probability 0."""
    if not a.adaptive:
        return []
    ratios = [(r, float(p.get("noise_clip", p["clip"])) / float(p["clip"])) for r, p in records]
    low = [(r, q) for r, q in ratios if q < 1 - RELATIVE]
    if not low:
        return []
    accounted = a.accounted_epsilon()
    claim, against = a.claim()
    multipliers = [a.combined_z(a.update_z * min(1.0, q)) for _, q in ratios]
    multipliers += [a.noise_multiplier] * max(0, a.releases - len(ratios))
    realised = a.rounds_epsilon(multipliers)
    round_, worst = min(low, key=lambda x: x[1])
    severity = "critical" if realised > claim else "medium"
    return [FlowerFinding("adaptive-noise-below-clip", severity,
                          f"{len(low)} of {len(records)} rounds added noise scaled with a clip below the one their "
                          f"updates were clipped to (smallest ratio {worst:.4f}, round {round_}): the clip was "
                          f"updated before the noise was added; at the realised multipliers the run spends epsilon "
                          f"{realised:.4g}, {'above' if realised > claim else 'within'} the {against} {claim:.4g}"
                          + (f" (accounted {accounted:.4g})" if against == "claimed" else ""),
                          {"rounds_below": [r for r, _ in low], "smallest_ratio": worst, "round": round_,
                           "realised_epsilon": realised, "accounted_epsilon": accounted, "claim_epsilon": claim,
                           "delta": a.delta, "smallest_noise_multiplier": min(multipliers), "false_alarm": 0.0})]
