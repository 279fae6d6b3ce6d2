"""Checks of the recorded samples against the accounted sampler: the scheme (fixed size m, or Poisson at
rate m/N), each client's inclusions against the rate, and independence across rounds.

Under the accounted sampler (fixed-size m of N without replacement, or Poisson at q = m/N, fresh each round):

- a client's number of inclusions in T rounds is Binomial(T, m/N) exactly;
- the overlap of two rounds' samples of sizes n and n' is Hypergeometric(N, n, n') exactly.

Both are tested in the upper tail (more inclusions, larger overlaps: what concentrates a client's
participation): inclusions at alpha / 2 with Bonferroni over the N clients; overlaps at alpha / 4 for the sum
of consecutive rounds' overlaps (independent hypergeometrics: exact convolution) and at alpha / 4 with
Bonferroni over every pair of rounds. On a correct run they raise a false finding with probability at most
``alpha`` together, whatever the expected counts. Where
one fires, the sampler is not the random draw the amplification by sampling rests on: the clients included
most often then spend the epsilon of their realised inclusions without amplification
(``Assumptions.participation_epsilon``), which is compared with the claim, or the accounted epsilon where no
claim is given (critical above it, high below it).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from attacks.flower_checks.assumptions import Assumptions
from attacks.flower_checks.findings import FlowerFinding


def connecting_cause(records) -> str:
    """Where the rounds sampled from different numbers of connected nodes: the likely cause, in words ("" else)."""
    populations = [int(p["population"]) for _, p in records]
    if len(set(populations)) == 1:
        return ""
    short = [r for r, p in records if int(p["population"]) < max(populations)]
    return (f"; rounds {short} sampled from fewer connected nodes ({populations} by round): nodes were still "
            "connecting when they started, and Flower samples a fraction of the nodes connected at that moment "
            "(wait for every node: the strategy's min_available_nodes, or the main's own wait)")


def check_scheme(records, a: Assumptions, alpha: float) -> list:
    """The population, the fixed sample size, or the Poisson total (binomial test at ``alpha``); where the number
    of connected nodes changed between rounds the findings name it as the cause."""
    sizes = np.array([len(p["sampled"]) for _, p in records])
    findings, cause = [], connecting_cause(records)
    if any(p["population"] != a.population for _, p in records):
        findings.append(FlowerFinding("population", "high", "the population sampled from differs from the accounted "
                                      f"{a.population}{cause}",
                                      {"seen": sorted({p["population"] for _, p in records}), "false_alarm": 0.0}))
    if a.sampling == "fixed-size" and np.any(sizes != a.sampled):
        seen = sorted(set(sizes.tolist()))
        findings.append(FlowerFinding("sampling-scheme", "critical", f"sample sizes {seen} are not the fixed "
                                      f"{a.sampled} the accountant assumes{cause}",
                                      {"sizes": sizes.tolist(), "populations": [p["population"] for _, p in records],
                                       "false_alarm": 0.0}))
    if a.sampling == "poisson":
        q, trials = a.sampled / a.population, len(records) * a.population
        p_value = stats.binomtest(int(sizes.sum()), trials, q).pvalue
        if p_value < alpha or np.all(sizes == sizes[0]):
            findings.append(FlowerFinding("sampling-scheme", "critical", "sample sizes are not Poisson at rate "
                                          f"{q:.3g} (total {sizes.sum()}, p = {p_value:.2g}; constant sizes: "
                                          f"{bool(np.all(sizes == sizes[0]))})", {"sizes": sizes.tolist(),
                                                                                "p_value": float(p_value),
                                                                                "false_alarm": alpha}))
    return findings


def inclusion_counts(records) -> dict[int, int]:
    counts: dict[int, int] = {}
    for _, p in records:
        for node in set(p["sampled"]):
            counts[node] = counts.get(node, 0) + 1
    return counts


def participation_values(counts: dict[int, int], a: Assumptions) -> dict:
    """The most-included clients and their epsilon without amplification, beside the accounted epsilon."""
    most = max(counts.values())
    claim, against = a.claim()
    return {"most_inclusions": most, "clients_at_most": sum(c == most for c in counts.values()),
            "participation_epsilon": a.participation_epsilon(most), "accounted_epsilon": a.accounted_epsilon(),
            "claim_epsilon": claim, "claim": against, "delta": a.delta}


def sampler_finding(code: str, what: str, values: dict, alpha: float) -> FlowerFinding:
    realised, claim = values["participation_epsilon"], values["claim_epsilon"]
    above = realised > claim
    return FlowerFinding(code, "critical" if above else "high",
                         f"{what}; the clients included most often ({values['clients_at_most']} of them, "
                         f"{values['most_inclusions']} times) spend epsilon {realised:.4g} at their realised "
                         f"inclusions without amplification, {'above' if above else 'below'} the {values['claim']} "
                         f"{claim:.4g}", {**values, "false_alarm": alpha / 2})


def check_inclusions(records, a: Assumptions, alpha: float) -> list:
    """Each client's inclusions against Binomial(T, m/N), upper tail at alpha / (2 N)."""
    counts = inclusion_counts(records)
    if not counts or len(counts) > a.population:
        return []
    rounds, rate = len(records), a.sampled / a.population
    nodes = sorted(counts)
    p_values = stats.binom.sf(np.array([counts[n] for n in nodes]) - 1, rounds, rate)
    threshold = alpha / 2 / a.population
    flagged = [n for n, p in zip(nodes, p_values, strict=True) if p < threshold]
    if not flagged:
        return []
    worst = nodes[int(np.argmin(p_values))]
    values = {**participation_values(counts, a), "clients_flagged": len(flagged), "node": worst,
              "inclusions": counts[worst], "expected": rounds * rate, "p_value": float(np.min(p_values))}
    what = (f"{len(flagged)} clients are sampled more often than the rate {rate:.3g} allows (node {worst}: "
            f"{counts[worst]} of {rounds} rounds, expected {rounds * rate:.3g}, p = {np.min(p_values):.2g} < "
            f"{threshold:.2g})")
    return [sampler_finding("sampler-not-uniform", what, values, alpha)]


def overlap_pmf(population: int, first: int, second: int) -> np.ndarray:
    """P[overlap = k], k = 0..min(first, second), of two independent uniform subsets of those sizes."""
    support = np.arange(min(first, second) + 1)
    return stats.hypergeom.pmf(support, population, first, second)


def consecutive_overlap_p(samples) -> tuple[float, int, float]:
    """(p, observed, expected) of the sum of consecutive rounds' overlaps: given X_1..X_t the overlap of X_t and a
    fresh X_{t+1} is hypergeometric whatever X_t is, so the T - 1 consecutive overlaps are independent and their
    sum has the exact distribution of the convolution of their pmfs."""
    pmf, observed, expected = np.ones(1), 0, 0.0
    for (_, s1, n1), (_, s2, n2) in zip(samples, samples[1:], strict=False):
        population = max(n1, n2, len(s1 | s2))
        step = overlap_pmf(population, len(s1), len(s2))
        pmf = np.convolve(pmf, step)
        observed += len(s1 & s2)
        expected += len(s1) * len(s2) / population
    return float(min(1.0, pmf[observed:].sum())), observed, expected


def check_overlaps(records, a: Assumptions, alpha: float) -> list:
    """Independence across rounds: the sum of consecutive rounds' overlaps (exact convolution of hypergeometric
    pmfs) at alpha / 4, and every pair of rounds' overlap against Hypergeometric(N, n, n') at alpha / (4 pairs),
    both upper tails."""
    samples = [(r, set(p["sampled"]), int(p["population"])) for r, p in records]
    pairs = len(samples) * (len(samples) - 1) // 2
    if pairs == 0:
        return []
    threshold, worst, flagged = alpha / 4 / pairs, None, 0
    for i, (r1, s1, n1) in enumerate(samples):
        for r2, s2, n2 in samples[i + 1:]:
            population = max(n1, n2, len(s1 | s2))
            overlap = len(s1 & s2)
            p_value = float(stats.hypergeom.sf(overlap - 1, population, len(s1), len(s2)))
            flagged += p_value < threshold
            if worst is None or p_value < worst[0]:
                worst = (p_value, r1, r2, overlap, len(s1), len(s2))
    chain_p, chain, chain_expected = consecutive_overlap_p(samples)
    if not flagged and chain_p >= alpha / 4:
        return []
    p_value, r1, r2, overlap, n1, n2 = worst
    values = {**participation_values(inclusion_counts(records), a), "pairs_flagged": flagged, "pairs": pairs,
              "rounds": [r1, r2], "overlap": overlap, "p_value": p_value, "consecutive_overlap": chain,
              "consecutive_expected": chain_expected, "consecutive_p_value": chain_p}
    what = (f"consecutive rounds share {chain} sampled clients in all (independent draws: {chain_expected:.3g} "
            f"expected, p = {chain_p:.2g}); {flagged} of {pairs} pairs of rounds overlap beyond chance (most: "
            f"rounds {r1} and {r2} share {overlap} of {n1} and {n2}, p = {p_value:.2g}): the sampler is not "
            "independent across rounds")
    return [sampler_finding("sampler-not-independent", what, values, alpha)]


def check_sampler(records, a: Assumptions, alpha: float) -> list:
    """All sampler findings: the scheme, then inclusions and overlaps (together at most ``alpha`` false alarms)."""
    return check_scheme(records, a, alpha) + check_inclusions(records, a, alpha) + check_overlaps(records, a, alpha)
