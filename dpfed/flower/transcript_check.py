"""Check recorded DP releases (``dpfed.flower.records``) against what the accountant assumed.

``Assumptions`` states the accountant's model: the sampling scheme and its rate or batch, the
population, the number of releases, the noise multiplier ``z`` (noise std ``z * C / m`` on the mean of
``m`` clipped updates, i.e. ``z * C`` on their sum) and the clipping norm ``C``, with equal weights
``1/m``. Each check is a statistical test at level ``alpha`` (Bonferroni across rounds where it is
repeated), so a correct run raises a false finding with probability at most ``alpha`` per check kind.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from accounting.errors import ConfigurationError, require_number
from dpfed.flower.findings import FlowerFinding
from dpfed.flower.records import releases

RELATIVE = 1e-6  # float tolerance for equal weights and equal clipping norms


@dataclass(frozen=True)
class Assumptions:
    """The accountant's model of the run (``sampling``: ``fixed-size`` or ``poisson``)."""

    sampling: str
    population: int
    sampled: int
    releases: int
    noise_multiplier: float
    clip: float

    def __post_init__(self):
        if self.sampling not in ("fixed-size", "poisson"):
            raise ConfigurationError("sampling", f"unknown sampling {self.sampling!r}; choose fixed-size or poisson")
        require_number("population", self.population, low=1, integer=True)
        require_number("sampled", self.sampled, low=1, high=self.population, integer=True)
        require_number("releases", self.releases, low=1, integer=True)
        require_number("noise_multiplier", self.noise_multiplier, low=0, low_open=True)
        require_number("clip", self.clip, low=0, low_open=True)

    @property
    def noise_std(self) -> float:
        """Std the accountant assumes on the mean of ``sampled`` updates."""
        return self.noise_multiplier * self.clip / self.sampled


def check_count(records, a: Assumptions) -> list:
    if len(records) == a.releases:
        return []
    severity = "critical" if len(records) > a.releases else "medium"
    return [FlowerFinding("release-count", severity, f"{len(records)} releases recorded, {a.releases} accounted",
                          {"recorded": len(records), "accounted": a.releases})]


def check_sampling(records, a: Assumptions, alpha: float) -> list:
    sizes = np.array([len(p["sampled"]) for _, p in records])
    findings = []
    if any(p["population"] != a.population for _, p in records):
        findings.append(FlowerFinding("population", "high", "the population sampled from differs from the accounted "
                                      f"{a.population}", {"seen": sorted({p["population"] for _, p in records})}))
    if a.sampling == "fixed-size" and np.any(sizes != a.sampled):
        seen = sorted(set(sizes.tolist()))
        findings.append(FlowerFinding("sampling-scheme", "critical", f"sample sizes {seen} are not the fixed "
                                      f"{a.sampled} the accountant assumes", {"sizes": sizes.tolist()}))
    if a.sampling == "poisson":
        q, trials = a.sampled / a.population, len(records) * a.population
        p_value = stats.binomtest(int(sizes.sum()), trials, q).pvalue
        if p_value < alpha or np.all(sizes == sizes[0]):
            findings.append(FlowerFinding("sampling-scheme", "critical", "sample sizes are not Poisson at rate "
                                          f"{q:.3g} (total {sizes.sum()}, p = {p_value:.2g}; constant sizes: "
                                          f"{bool(np.all(sizes == sizes[0]))})", {"sizes": sizes.tolist()}))
    return findings + check_uniform(records, a, alpha)


def check_uniform(records, a: Assumptions, alpha: float) -> list:
    """Chi-square test that every participant is sampled equally often (when the counts allow it)."""
    ids = sorted({i for _, p in records for i in p["sampled"]})
    expected = len(records) * a.sampled / a.population
    if expected < 5 or len(ids) > a.population:
        return []
    counts = np.zeros(a.population)
    index = {i: k for k, i in enumerate(ids)}
    for _, p in records:
        for i in p["sampled"]:
            counts[index[i]] += 1
    p_value = stats.chisquare(counts).pvalue
    if p_value >= alpha:
        return []
    return [FlowerFinding("sampling-rate", "high", f"participants are not sampled uniformly (chi-square p = "
                          f"{p_value:.2g}); the rate m/N does not hold for everybody", {"p_value": float(p_value)})]


def check_weights(records, a: Assumptions) -> list:
    findings = []
    for round_, p in records:
        weights = np.asarray(p["weights"], dtype=float)
        if len(p["replies"]) != len(p["sampled"]):
            findings.append(FlowerFinding("dropouts", "medium", f"round {round_}: {len(p['replies'])} replies of "
                                          f"{len(p['sampled'])} sampled", {"round": round_}))
        if weights.size and weights.max() > (1 + RELATIVE) / a.sampled:
            effective = a.noise_multiplier / (a.sampled * weights.max())
            findings.append(FlowerFinding("unequal-weights", "critical", f"round {round_}: largest weight "
                                          f"{weights.max():.4g} > 1/m = {1 / a.sampled:.4g}; effective noise "
                                          f"multiplier {effective:.4g} instead of {a.noise_multiplier:g}",
                                          {"round": round_, "max_weight": float(weights.max()),
                                           "effective_noise_multiplier": effective}))
        if p["clip"] > a.clip * (1 + RELATIVE):
            findings.append(FlowerFinding("clip", "critical", f"round {round_}: clipping norm {p['clip']:g} above the "
                                          f"accounted {a.clip:g}", {"round": round_, "clip": p["clip"]}))
    return findings


def check_noise(records, a: Assumptions, alpha: float) -> list:
    """Lower-tail chi-square test per round: sum(noise^2) / sigma^2 ~ chi2(d) if the std is as accounted."""
    findings = []
    for round_, p in records:
        noise = np.asarray(p["noise"], dtype=float)
        if not np.all(np.isfinite(noise)):  # nan compares false: the test below would pass it
            findings.append(FlowerFinding("noise-not-finite", "critical", f"round {round_}: "
                                          f"{int(np.sum(~np.isfinite(noise)))} of {noise.size} noise coordinates are "
                                          "not finite (an overflow?): the release is not the accounted Gaussian",
                                          {"round": round_}))
            continue
        statistic = float(np.sum(noise ** 2) / a.noise_std ** 2)
        p_value = float(stats.chi2.cdf(statistic, df=noise.size))
        if p_value < alpha / len(records):
            findings.append(FlowerFinding("noise-below-accounted", "critical", f"round {round_}: noise std "
                                          f"{p['noise_std']:.4g} below the accounted z*C/m = {a.noise_std:.4g} "
                                          f"(ratio {p['noise_std'] / a.noise_std:.3f}, p = {p_value:.2g})",
                                          {"round": round_, "noise_std": p["noise_std"], "accounted": a.noise_std}))
    return findings


def check_transcript(transcript, assumptions: Assumptions, alpha: float = 1e-3) -> list:
    """All findings of a transcript against ``assumptions`` (empty: the run matches the accountant)."""
    require_number("alpha", alpha, low=0, high=1, low_open=True, high_open=True)
    records = releases(transcript)
    if not records:
        return [FlowerFinding("no-releases", "critical", "the transcript holds no DP release records", {})]
    return (check_count(records, assumptions) + check_sampling(records, assumptions, alpha)
            + check_weights(records, assumptions) + check_noise(records, assumptions, alpha))
