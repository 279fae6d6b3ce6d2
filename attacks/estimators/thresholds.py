"""Threshold tests on sorted scores, chosen so that the usual binomial bounds stay valid.

Direction "in-high" answers "in" when score > t and bounds TPR - delta <= e^eps FPR; direction
"out-low" answers "out" when score < s and bounds TNR - delta <= e^eps FNR. Candidate thresholds are
order statistics at a fixed, data-independent grid of ranks j: t_j = the j-th largest "out" score and
s_j = the j-th smallest "in" score. Whatever the distribution (atoms and ties included), the
probability P_out(score > t_j) is stochastically below Beta(j, n - j + 1), which is the
Clopper-Pearson upper bound for j - 1 observed successes (at most j - 1 scores lie strictly beyond
t_j); likewise for s_j. The other world's scores are independent of the threshold, so their counts
are plain binomials, and a Bonferroni correction over the grid is valid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def as_sorted(scores: np.ndarray) -> np.ndarray:
    """The scores in ascending order (no copy if they already are)."""
    if scores.size < 2 or bool(np.all(scores[1:] >= scores[:-1])):
        return scores
    return np.sort(scores)


def selection_mask(gen: np.random.Generator, n: int, fraction: float) -> np.ndarray:
    """Independent Bernoulli(~fraction) flags for n trials (fraction rounded to 1/65536), fast."""
    bits = np.frombuffer(gen.bytes(2 * n), dtype=np.uint16)
    return bits < int(round(fraction * 65536))


def rank_grid(n: int, candidates: int) -> np.ndarray:
    """About ``candidates`` ranks in 1..n, geometrically spaced (dense in the tail where DP binds)."""
    return np.unique(np.round(np.geomspace(1, n, max(1, candidates))).astype(np.int64))


@dataclass(frozen=True)
class ThresholdTests:
    """A family of threshold tests: counts for the lower-bounded and upper-bounded rate of each."""

    direction: np.ndarray       # "in-high" or "out-low" per test
    threshold: np.ndarray       # score threshold per test
    lower_counts: np.ndarray    # TP (in-high) or TN (out-low)
    lower_totals: np.ndarray
    upper_counts: np.ndarray    # FP (in-high) or FN (out-low): observed count, or rank - 1
    upper_totals: np.ndarray

    def __len__(self) -> int:
        return int(self.threshold.size)

    def select(self, index) -> ThresholdTests:
        return ThresholdTests(*(getattr(self, f)[index] for f in self.__dataclass_fields__))

    def as_details(self, corrected_for: int) -> dict:
        return {"lower_counts": self.lower_counts.tolist(), "lower_totals": self.lower_totals.tolist(),
                "upper_counts": self.upper_counts.tolist(), "upper_totals": self.upper_totals.tolist(),
                "corrected_for": int(corrected_for)}


def order_statistic_tests(out_sorted: np.ndarray, in_sorted: np.ndarray, candidates: int) -> ThresholdTests:
    """Both directions at order-statistic thresholds (see module docstring); scores sorted ascending."""
    n_out, n_in = out_sorted.size, in_sorted.size
    k_out = rank_grid(n_out, candidates)
    t = out_sorted[n_out - k_out]                                   # k-th largest out score
    tp = n_in - np.searchsorted(in_sorted, t, side="right")         # in scores > t
    k_in = rank_grid(n_in, candidates)
    s = in_sorted[k_in - 1]                                         # k-th smallest in score
    tn = np.searchsorted(out_sorted, s, side="left")                # out scores < s
    return ThresholdTests(
        direction=np.array(["in-high"] * k_out.size + ["out-low"] * k_in.size),
        threshold=np.concatenate([t, s]),
        lower_counts=np.concatenate([tp, tn]).astype(np.int64),
        lower_totals=np.concatenate([np.full(k_out.size, n_in), np.full(k_in.size, n_out)]),
        upper_counts=np.concatenate([k_out - 1, k_in - 1]),
        upper_totals=np.concatenate([np.full(k_out.size, n_out), np.full(k_in.size, n_in)]),
    )


def fixed_threshold_tests(out_sorted: np.ndarray, in_sorted: np.ndarray, direction,
                          threshold) -> ThresholdTests:
    """Tests at thresholds fixed in advance (independent of these scores): plain binomial counts."""
    direction = np.atleast_1d(np.asarray(direction))
    threshold = np.atleast_1d(np.asarray(threshold, dtype=float))
    n_out, n_in = out_sorted.size, in_sorted.size
    high = direction == "in-high"
    tp = n_in - np.searchsorted(in_sorted, threshold, side="right")     # in > t
    fp = n_out - np.searchsorted(out_sorted, threshold, side="right")   # out > t
    tn = np.searchsorted(out_sorted, threshold, side="left")            # out < t
    fn = np.searchsorted(in_sorted, threshold, side="left")             # in < t
    return ThresholdTests(
        direction=direction, threshold=threshold,
        lower_counts=np.where(high, tp, tn), lower_totals=np.where(high, n_in, n_out),
        upper_counts=np.where(high, fp, fn), upper_totals=np.where(high, n_out, n_in),
    )


def select_threshold(out_sorted: np.ndarray, in_sorted: np.ndarray, delta: float, alpha: float,
                     candidates: int) -> tuple[str, float]:
    """Best (direction, threshold) on a selection sample, for evaluation on independent trials.

    Candidates are pooled order statistics on a rank grid from both ends; each is scored by its
    Clopper-Pearson epsilon at ``alpha`` on this sample (no correction: only the choice depends on it).
    """
    from attacks.estimators.binomial import threshold_epsilons

    pooled = np.sort(np.concatenate([out_sorted, in_sorted]), kind="stable")  # merges two sorted runs
    k = rank_grid(pooled.size, candidates)
    thresholds = np.concatenate([pooled[pooled.size - k], pooled[k - 1]])
    direction = np.array(["in-high"] * k.size + ["out-low"] * k.size)
    tests = fixed_threshold_tests(out_sorted, in_sorted, direction, thresholds)
    eps, _, _ = threshold_epsilons(tests.lower_counts, tests.lower_totals, tests.upper_counts,
                                   tests.upper_totals, delta, alpha)
    i = int(np.argmax(eps))
    return str(direction[i]), float(thresholds[i])
