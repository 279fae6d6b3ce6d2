"""Thresholds fixed before the test trials, and scores reduced to counts over them.

For budgets too large to keep every score, an attack fixes a sorted grid of thresholds ``t_1 < ... <
t_G`` on an independent *pilot* batch (its own random stream), then reduces every test batch on the fly
to a histogram over the grid: bin ``b`` counts the scores with exactly ``b`` thresholds strictly below
them. For each grid threshold ``t`` two tests follow from the histogram, whatever ties or atoms the
score has: "in-high" (answer "in" when score > t: TP and FP counts) and "out-low" (answer "out" when
score <= t: TN and FN counts). Because the grid does not depend on the test trials, every count is a
plain binomial and the usual Clopper-Pearson bounds apply; the pilot also chooses a few of these tests
(those it predicts to certify the most at the full budget) and the rigorous estimator corrects only for
those (Bonferroni). Memory is the grid, not the trials.

The pilot predicts each test's counts at the full budget from its own empirical rates; in a tail the
pilot cannot resolve, the rate is extrapolated with an exponential tail fitted to its most extreme
scores (a heuristic: it only steers the choice of thresholds, never the validity of a bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attacks.estimators.binomial import threshold_epsilons
from attacks.estimators.pilot_scores import SortedPilot, pooled_sample
from attacks.estimators.thresholds import ThresholdTests, rank_grid

#: extra entries after the histogram in a counts vector: n, sum, sum of squares, min, max
MOMENTS = 5
TESTS_PER_DIRECTION = 4
TAIL_POINTS = 20  # pilot order statistics behind the exponential tail fit


@dataclass(frozen=True)
class ThresholdGrid:
    """Sorted thresholds ``edges`` and the rigorous tests chosen among them (edge index, direction)."""

    edges: np.ndarray
    test_edges: np.ndarray  # indices into ``edges``
    test_directions: np.ndarray  # "in-high" or "out-low"

    @property
    def size(self) -> int:
        """Length of a counts vector: the histogram (len(edges) + 1 bins) and the moments."""
        return self.edges.size + 1 + MOMENTS

    def count(self, scores) -> np.ndarray:
        """The counts vector of one batch of scores (histogram over the grid, then n, sum, sum of
        squares, min, max); scores of any array backend, counted where they are."""
        from accounting.mechanisms import array_namespace
        from attacks.backend import to_numpy

        xp = array_namespace(None, scores)
        if xp is not np and int(scores.shape[0]) > 0:
            return _count_on_device(scores, self.edges)
        scores = xp.sort(xp.reshape(xp.asarray(scores, dtype=xp.float64), (-1,)))  # then G binary searches
        edges = self.edges if xp is np else xp.asarray(self.edges, device=scores.device)
        at_most = to_numpy(xp.searchsorted(scores, edges, side="right"))  # scores <= edge j
        n = int(scores.shape[0])
        bins = np.diff(np.concatenate([[0], at_most, [n]]))
        moments = [
            n,
            float(xp.sum(scores)),
            float(xp.sum(scores * scores)),
            float(scores[0]) if n else math.inf,
            float(scores[-1]) if n else -math.inf,
        ]
        return np.concatenate([bins.astype(float), moments])

    def to_dict(self) -> dict:
        return {
            "edges": self.edges.tolist(),
            "test_edges": self.test_edges.tolist(),
            "test_directions": self.test_directions.tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict) -> ThresholdGrid:
        return cls(
            np.asarray(data["edges"], dtype=float),
            np.asarray(data["test_edges"], dtype=np.int64),
            np.asarray(data["test_directions"], dtype=str),
        )


def _count_on_device(scores, edges) -> np.ndarray:
    """``ThresholdGrid.count`` of a torch tensor where it lives, without sorting: each score's bin (the
    number of edges strictly below it: ``bucketize``), a ``bincount`` and the moments, brought back in one
    copy (one host-device synchronisation per batch)."""
    import torch

    scores = scores.reshape(-1).to(torch.float64)
    boundaries = torch.as_tensor(edges, dtype=torch.float64).to(scores.device, non_blocking=True)
    bins = torch.bincount(torch.bucketize(scores, boundaries, right=False), minlength=edges.size + 1)
    n = torch.full((1,), scores.shape[0], dtype=torch.float64, device=scores.device)
    low, high = torch.aminmax(scores)
    moments = torch.stack([scores.sum(), torch.dot(scores, scores), low, high])
    return torch.cat([bins.to(torch.float64), n, moments]).cpu().numpy()


def merge_counts(total: np.ndarray | None, batch: np.ndarray) -> np.ndarray:
    """Add one batch's counts vector to a running total (min and max combine as such)."""
    if total is None:
        return np.array(batch, dtype=float)
    out = total + batch
    out[-2] = min(total[-2], batch[-2])
    out[-1] = max(total[-1], batch[-1])
    return out


def grid_tests(
    grid: ThresholdGrid, counts_out: np.ndarray, counts_in: np.ndarray, edges=None, directions=None
) -> ThresholdTests:
    """Threshold tests at grid ``edges`` (indices; default all, both directions) from two counts vectors."""
    g = grid.edges.size
    hist_out, hist_in = counts_out[: g + 1], counts_in[: g + 1]
    n_out, n_in = hist_out.sum(), hist_in.sum()
    below_out = np.cumsum(hist_out)[:g]  # scores <= edge j: bins 0..j
    below_in = np.cumsum(hist_in)[:g]
    if edges is None:
        edges = np.concatenate([np.arange(g), np.arange(g)])
        directions = np.array(["in-high"] * g + ["out-low"] * g)
    edges, directions = np.asarray(edges, dtype=np.int64), np.asarray(directions)
    high = directions == "in-high"
    return ThresholdTests(
        direction=directions,
        threshold=grid.edges[edges],
        lower_counts=np.where(high, n_in - below_in[edges], below_out[edges]).astype(np.int64),
        lower_totals=np.where(high, n_in, n_out).astype(np.int64),
        upper_counts=np.where(high, n_out - below_out[edges], below_in[edges]).astype(np.int64),
        upper_totals=np.where(high, n_out, n_in).astype(np.int64),
    )


POOLED_QUANTILE_SAMPLE = 1_000_000  # pilot scores per world the pooled quantiles are read from


def _candidate_edges(out_sorted: SortedPilot, in_sorted: SortedPilot, points: int) -> np.ndarray:
    """Both pilot worlds' order statistics, geometric in both tails, plus evenly spaced quantiles of the
    pooled pilot. Above ``POOLED_QUANTILE_SAMPLE`` scores per world the pooled quantiles are read from an
    evenly strided subsample of each sorted world (the exact ones cost a selection over up to 1e8 scores,
    seconds on a large pilot). Any pilot-determined candidates keep the tests valid: the pilot is
    independent of the test trials; the tails keep their exact order statistics."""
    stride = max(1, -(-max(out_sorted.size, in_sorted.size) // POOLED_QUANTILE_SAMPLE))
    pooled = pooled_sample(out_sorted, in_sorted, stride)
    values = [np.quantile(pooled, np.linspace(0, 1, points // 4))]
    for s in (out_sorted, in_sorted):
        k = rank_grid(s.size, points // 4)
        values.append(s.take(np.concatenate([s.size - k, k - 1])))
    return np.unique(np.concatenate(values))


def _tail(sorted_scores: SortedPilot, upper: bool) -> tuple[float, float, float] | None:
    """(anchor, scale, anchor rate) of an exponential tail fitted to the most extreme pilot scores."""
    k = min(TAIL_POINTS, sorted_scores.size // 10)
    if k < 2:
        return None
    extreme = sorted_scores.tail(k) if upper else sorted_scores.head(k)
    anchor = float(extreme[0] if upper else extreme[-1])
    scale = float(np.mean(np.abs(extreme - anchor)))
    return (anchor, scale, k / sorted_scores.size) if scale > 0 else None


def _extensions(tail, upper: bool, budget: int) -> np.ndarray:
    """Thresholds beyond the pilot's reach, one per decade of tail rate, down to about one trial."""
    if tail is None:
        return np.empty(0)
    anchor, scale, rate = tail
    decades = int(math.floor(math.log10(max(rate * budget, 1.0))))
    steps = np.arange(1, decades + 1) * scale * math.log(10.0)
    return anchor + steps if upper else anchor - steps


def _predicted_rates(sorted_scores: SortedPilot, thresholds, tail, upper: bool) -> np.ndarray:
    """Pilot estimate of P(score > t) (upper) or P(score <= t), extrapolated in the unresolved tail."""
    n = sorted_scores.size
    if upper:
        rate = (n - sorted_scores.at_most(thresholds)) / n
    else:
        rate = sorted_scores.at_most(thresholds) / n
    if tail is not None:
        anchor, scale, anchor_rate = tail
        beyond = thresholds > anchor if upper else thresholds < anchor
        distance = np.abs(thresholds - anchor)
        rate = np.where(beyond, anchor_rate * np.exp(-distance / scale), rate)
    return rate


def pilot_grid(
    out_pilot,
    in_pilot,
    trials_out: int,
    trials_in: int,
    delta: float,
    confidence: float,
    points: int = 256,
    tests_per_direction: int = TESTS_PER_DIRECTION,
) -> ThresholdGrid:
    """The threshold grid and its rigorous tests, chosen on pilot scores (independent of the test trials).

    The tests are, per direction, the ``tests_per_direction`` grid thresholds whose Clopper-Pearson
    epsilon at the full budget (``trials_out``, ``trials_in``), predicted from the pilot, is largest.
    Pilot scores may be NumPy arrays or PyTorch tensors: a tensor is sorted and searched on its device
    (``attacks.estimators.pilot_scores``), with the same grid as NumPy's from the same scores.
    """
    out_sorted, in_sorted = SortedPilot(out_pilot), SortedPilot(in_pilot)
    out_tail, in_tail = _tail(out_sorted, upper=True), _tail(in_sorted, upper=False)
    edges = np.unique(
        np.concatenate(
            [
                _candidate_edges(out_sorted, in_sorted, points),
                _extensions(out_tail, True, trials_out),
                _extensions(in_tail, False, trials_in),
            ]
        )
    )
    m = 2 * tests_per_direction
    alpha = (1.0 - confidence) / m
    chosen_tests = []  # (predicted epsilon, lower rate, edge index, direction)
    for direction in ("in-high", "out-low"):
        if direction == "in-high":  # TPR from the in world, FPR from the out world's upper tail
            lower = _predicted_rates(in_sorted, edges, None, upper=True)
            upper_rate = _predicted_rates(out_sorted, edges, out_tail, upper=True)
            n_lower, n_upper = trials_in, trials_out
        else:  # TNR from the out world, FNR from the in world's lower tail
            lower = _predicted_rates(out_sorted, edges, None, upper=False)
            upper_rate = _predicted_rates(in_sorted, edges, in_tail, upper=False)
            n_lower, n_upper = trials_out, trials_in
        eps, _, _ = threshold_epsilons(
            np.round(lower * n_lower), n_lower, np.minimum(upper_rate * n_upper, n_upper - 1), n_upper, delta, alpha
        )
        order = np.lexsort((-lower, -eps))  # best predicted epsilon first, then the larger lower rate
        chosen_tests += [(eps[j], lower[j], j, direction) for j in order[:tests_per_direction]]
    chosen_tests.sort(key=lambda t: (-t[0], -t[1]))  # the overall best prediction first
    return ThresholdGrid(
        edges, np.array([t[2] for t in chosen_tests], dtype=np.int64), np.array([t[3] for t in chosen_tests])
    )
