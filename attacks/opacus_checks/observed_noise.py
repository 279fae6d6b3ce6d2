"""The test of the noise a private optimizer really added (``dpfed.dpsgd.observe`` noise entries: the noisy minus
the clipped gradient sum, per noise level) against the ``z C`` accounted, taking the noise as Gaussian and
independent across coordinates (its sum of squares over ``(z C)^2`` is then chi2 with one degree per coordinate):

- ``noise-below-accounted``: the noise the optimizer added below ``z C`` by a lower-tail chi-square test at
  ``alpha`` (Bonferroni over the noise levels seen); ``noise_power`` says what the test can refute.
"""

from __future__ import annotations

import math

from scipy import stats

from attacks.opacus_checks.findings import OpacusFinding


def measured_noise(entries) -> list[dict]:
    """The noise measurements that can be tested (``dpfed.dpsgd.observe`` noise entries with coordinates and a
    positive accounted std)."""
    return [n for n in entries if n["count"] > 0 and n["expected_std"] > 0]


def noise_test(noise: dict) -> tuple[float, float]:
    """``(p, ratio)``: the lower-tail chi-square p-value of one measurement (sum of squares / (z C)^2 ~ chi2(count)
    when the noise is as accounted) and the measured std over the accounted."""
    p_value = float(stats.chi2.cdf(noise["sum_squares"] / noise["expected_std"] ** 2, df=noise["count"]))
    return p_value, math.sqrt(noise["sum_squares"] / noise["count"]) / noise["expected_std"]


def noise_power(record: dict, alpha: float = 1e-3, probability: float = 0.9) -> dict | None:
    """What the noise test can refute: with the coordinates measured at the weakest noise level, the largest ratio
    r of the accounted std such that noise r z C is refuted with ``probability`` (closed form: the statistic is
    r^2 chi2(n), refuted below chi2(n)'s ``alpha / tests`` quantile)."""
    tests = measured_noise(record["noise"])
    if not tests:
        return None
    n = min(t["count"] for t in tests)
    threshold = stats.chi2.ppf(alpha / len(tests), df=n)
    return {"coordinates": n, "refuted_ratio": math.sqrt(threshold / stats.chi2.ppf(probability, df=n)),
            "probability": probability, "false_alarm": alpha}


def noise_findings(record: dict, alpha: float) -> list:
    tests = measured_noise(record["noise"])
    out = []
    for noise in tests:
        p_value, ratio = noise_test(noise)
        if p_value < alpha / len(tests):
            out.append(OpacusFinding("noise-below-accounted", "critical",
                                     f"the private optimizer added noise of std {ratio:.3f} x z C (p = {p_value:.2g} "
                                     f"over {noise['count']} coordinates): the effective noise multiplier is "
                                     f"{ratio:.3f} of the one accounted", {"ratio": ratio, "p_value": p_value,
                                                                          "false_alarm": alpha}))
    return out
