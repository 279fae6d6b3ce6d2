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

import weakref
from dataclasses import dataclass

import numpy as np

# Sorted copies of the last few large score arrays, so that the estimators and the ROC of one audit
# sort 10^7 scores once. Entries die with their array and are checked against its size and sum.
_SORTED_CACHE: dict[int, tuple] = {}
_CACHE_MIN_SIZE = 100_000
_CACHE_ENTRIES = 4


def as_sorted(scores: np.ndarray) -> np.ndarray:
    """The scores in ascending order (no copy if they already are; large sorts are remembered)."""
    if scores.size < 2 or bool(np.all(scores[1:] >= scores[:-1])):
        return scores
    if scores.size < _CACHE_MIN_SIZE:
        return np.sort(scores)
    key, total = id(scores), float(np.sum(scores))
    entry = _SORTED_CACHE.get(key)
    if entry is not None and entry[0]() is scores and entry[1] == (scores.size, total):
        return entry[2]
    result = np.sort(scores)
    result.flags.writeable = False
    try:
        ref = weakref.ref(scores, lambda _, k=key: _SORTED_CACHE.pop(k, None))
    except TypeError:  # not weak-referenceable: do not cache
        return result
    while len(_SORTED_CACHE) >= _CACHE_ENTRIES:
        _SORTED_CACHE.pop(next(iter(_SORTED_CACHE)))
    _SORTED_CACHE[key] = (ref, (scores.size, total), result)
    return result


def selection_mask(gen: np.random.Generator, n: int, fraction: float) -> np.ndarray:
    """Independent Bernoulli(~fraction) flags for n trials (fraction rounded to 1/65536), fast."""
    bits = np.frombuffer(gen.bytes(2 * n), dtype=np.uint16)
    return bits < int(round(fraction * 65536))


def split_sorted(out_sorted: np.ndarray, in_sorted: np.ndarray, gen: np.random.Generator,
                 fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """A random selection subset of each world (each trial kept with probability ~fraction), sorted.

    The evaluation subset is the complement; its counts are obtained by ``evaluation_tests``
    without materialising it.
    """
    return (out_sorted[selection_mask(gen, out_sorted.size, fraction)],
            in_sorted[selection_mask(gen, in_sorted.size, fraction)])


def evaluation_tests(out_sorted, in_sorted, sel_out, sel_in, direction, threshold) -> ThresholdTests:
    """Fixed-threshold tests on the trials NOT in the selection subsets (all minus selection)."""
    full = fixed_threshold_tests(out_sorted, in_sorted, direction, threshold)
    sel = fixed_threshold_tests(sel_out, sel_in, direction, threshold)
    return ThresholdTests(full.direction, full.threshold, full.lower_counts - sel.lower_counts,
                          full.lower_totals - sel.lower_totals, full.upper_counts - sel.upper_counts,
                          full.upper_totals - sel.upper_totals)


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

    Candidates are both worlds' order statistics on a rank grid from both ends, in both directions;
    each is scored by its Clopper-Pearson epsilon at ``alpha`` on this sample (no correction: only the
    choice depends on it).
    """
    from attacks.estimators.binomial import threshold_epsilons

    values = [s[np.concatenate([s.size - k, k - 1])] for s in (out_sorted, in_sorted)
              for k in [rank_grid(s.size, candidates)]]
    values = np.unique(np.concatenate(values))
    thresholds = np.concatenate([values, values])
    direction = np.array(["in-high"] * values.size + ["out-low"] * values.size)
    tests = fixed_threshold_tests(out_sorted, in_sorted, direction, thresholds)
    eps, _, _ = threshold_epsilons(tests.lower_counts, tests.lower_totals, tests.upper_counts,
                                   tests.upper_totals, delta, alpha)
    i = int(np.argmax(eps))
    return str(direction[i]), float(thresholds[i])
