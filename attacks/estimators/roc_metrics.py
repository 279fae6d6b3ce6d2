"""Descriptive ROC metrics of a membership score, with bootstrap intervals: the maximum TPR at fixed FPRs,
the area under the ROC convex hull and the maximum balanced accuracy.

These describe the attack, not the mechanism: they are NOT lower bounds on epsilon, return no
``EpsilonBound`` and never feed a verdict. A higher score means "canary present"; every rule is
"guess in when score >= t" with t one of the pooled scores' unique VALUES (or +inf: never guess in), so
the metrics, their thresholds and their intervals depend on the values alone, never on row order.

- TPR at FPR a: the largest TPR of a threshold whose FPR is at most a (a real threshold attains it; no
  randomising between two thresholds, so it can sit below a convex-hull figure such as jax-privacy's).
- AUROC (hull): the area under the ROC convex hull, which equals the AUC after pooling adjacent score
  values whose fraction of "in" scores decreases (isotonic regression, ``scipy.optimize``); at least
  the Mann-Whitney AUC.
- Maximum accuracy: max over thresholds of (TPR + TNR) / 2 (balanced: both worlds weigh 1/2).

Intervals: ``scipy.stats.bootstrap`` resampling each world independently (seeded), BCa up to
``BCA_MAX_SCORES`` scores; above that BCa's jackknife (one evaluation per score, each of cost n) is out
of reach and the interval is the bias-corrected percentile one (BC: BCa with acceleration 0, from the
same bootstrap distribution). Above ``BOOTSTRAP_MAX_SCORES`` no interval is computed.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import optimize, special, stats

FPR_LEVELS = (1e-3, 1e-2)
BOOTSTRAP_SEED = 0
RESAMPLES = 1000
RESAMPLES_LARGE = 200  # above LARGE_SCORES unique values (each resample's hull costs a pass over them)
LARGE_SCORES = 20_000
BCA_MAX_SCORES = 2_000
BOOTSTRAP_MAX_SCORES = 200_000
NOTE = "descriptive metrics of the attack, not lower bounds on epsilon; never used in a verdict"


def _counts(size: int, positions: np.ndarray) -> np.ndarray:
    """(rows, size) counts of each row's positions (indices of scores in the unique values, as floats)."""
    positions = np.asarray(positions)
    rows = positions.reshape(-1, positions.shape[-1]).astype(np.int64)
    rows += size * np.arange(rows.shape[0])[:, None]
    return np.bincount(rows.ravel(), minlength=size * rows.shape[0]).reshape(-1, size)


def _rates(counts_out: np.ndarray, counts_in: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(FPR, TPR) of "score >= grid[u]" for u = U-1 .. 0, after the point (0, 0) of threshold +inf."""
    def rate(counts):
        tail = np.cumsum(counts[:, ::-1], axis=1) / counts.sum(axis=1, keepdims=True)
        return np.concatenate([np.zeros((counts.shape[0], 1)), tail], axis=1)
    return rate(counts_out), rate(counts_in)


def _hull_auc(counts_out: np.ndarray, counts_in: np.ndarray) -> np.ndarray:
    """Area under the ROC convex hull of each row (isotonic pooling of the "in" fraction per value)."""
    areas = np.empty(counts_out.shape[0])
    for k, (out_k, in_k) in enumerate(zip(counts_out, counts_in, strict=True)):
        total = out_k + in_k
        keep = total > 0
        weight = total[keep].astype(float)
        fitted = optimize.isotonic_regression(in_k[keep] / weight, weights=weight, increasing=True).x
        dy = (fitted * weight)[::-1] / in_k.sum()
        dx = ((1.0 - fitted) * weight)[::-1] / out_k.sum()
        tpr_before = np.cumsum(dy) - dy
        areas[k] = float(np.sum(dx * (tpr_before + dy / 2.0)))
    return areas


def _point_metrics(fpr: np.ndarray, tpr: np.ndarray, fprs) -> np.ndarray:
    """(rows, len(fprs) + 1): the TPR at each FPR level, then the maximum balanced accuracy."""
    columns = [np.max(np.where(fpr <= a * (1 + 1e-12), tpr, 0.0), axis=1) for a in fprs]
    columns.append(np.max((tpr + 1.0 - fpr) / 2.0, axis=1))
    return np.stack(columns, axis=1)


def _statistic(size: int, fprs):
    """The metrics as a vectorised statistic of the two worlds' positions in the unique values."""
    def statistic(scores_out, scores_in, axis=-1):
        scores_out, scores_in = np.moveaxis(scores_out, axis, -1), np.moveaxis(scores_in, axis, -1)
        out_c, in_c = _counts(size, scores_out), _counts(size, scores_in)
        fpr, tpr = _rates(out_c, in_c)
        values = np.concatenate([_point_metrics(fpr, tpr, fprs), _hull_auc(out_c, in_c)[:, None]], axis=1)
        lead = np.broadcast_shapes(np.shape(scores_out)[:-1], np.shape(scores_in)[:-1])
        return np.moveaxis(values.reshape(*lead, values.shape[1]), -1, 0)
    return statistic


def _thresholds(grid, fpr, tpr, fprs) -> tuple[list, float | None]:
    """The threshold values attaining each TPR-at-FPR figure and the maximum accuracy (None: +inf)."""
    values = np.concatenate([[np.inf], grid[::-1]])
    out = []
    for a in fprs:
        allowed = np.flatnonzero(fpr <= a * (1 + 1e-12))
        j = int(allowed[np.argmax(tpr[allowed])])  # first (largest threshold) among equal TPRs
        out.append((values[j], float(fpr[j])))
    j = int(np.argmax(tpr - fpr))
    return out, values[j]


def _intervals(out_scores, in_scores, statistic, confidence, seed, resamples, bca_max_scores, bootstrap_max_scores):
    """(method, low, high) from ``scipy.stats.bootstrap`` (see the module docstring)."""
    size = out_scores.size + in_scores.size
    if size > bootstrap_max_scores or resamples == 0:
        return None, None, None
    batch = max(1, int(2_000_000 // size))
    if size <= bca_max_scores:
        with warnings.catch_warnings():  # a degenerate distribution (every resample equal) has no BCa interval
            warnings.simplefilter("ignore")
            res = stats.bootstrap((out_scores, in_scores), statistic, vectorized=True, method="BCa", batch=batch,
                                  n_resamples=resamples, confidence_level=confidence, rng=seed)
        low, high = np.array(res.confidence_interval.low), np.array(res.confidence_interval.high)
        dist = res.bootstrap_distribution
        bad = ~(np.isfinite(low) & np.isfinite(high))  # then the range of the resamples (a single value)
        low[bad], high[bad] = dist[bad].min(axis=1), dist[bad].max(axis=1)
        return "BCa", low, high
    res = stats.bootstrap((out_scores, in_scores), statistic, vectorized=True, method="percentile", batch=batch,
                          n_resamples=resamples, confidence_level=confidence, rng=seed)
    dist = res.bootstrap_distribution  # (metrics, resamples)
    theta = statistic(out_scores, in_scores)
    below = (np.sum(dist < theta[:, None], axis=1) + 0.5 * np.sum(dist == theta[:, None], axis=1)) / resamples
    z0 = special.ndtri(np.clip(below, 0.5 / resamples, 1 - 0.5 / resamples))
    z = special.ndtri((1.0 - confidence) / 2.0)
    low = [np.quantile(d, special.ndtr(2 * z0_k + z)) for d, z0_k in zip(dist, z0, strict=True)]
    high = [np.quantile(d, special.ndtr(2 * z0_k - z)) for d, z0_k in zip(dist, z0, strict=True)]
    return "BC", np.array(low), np.array(high)


def roc_metrics(scores_out, scores_in, confidence: float = 0.95, fprs=FPR_LEVELS, seed: int = BOOTSTRAP_SEED,
                resamples: int | None = None, bca_max_scores: int = BCA_MAX_SCORES,
                bootstrap_max_scores: int = BOOTSTRAP_MAX_SCORES) -> dict:
    """The descriptive metrics of scores without / with the canary (or not included / included), with
    bootstrap intervals at ``confidence`` and the threshold attaining each (a JSON-ready dict).
    ``resamples`` defaults to ``RESAMPLES``, or ``RESAMPLES_LARGE`` above ``LARGE_SCORES`` unique values; BCa
    up to ``bca_max_scores`` scores in all, BC above, no interval above ``bootstrap_max_scores``."""
    out_scores = np.sort(np.asarray(scores_out, dtype=float).ravel())
    in_scores = np.sort(np.asarray(scores_in, dtype=float).ravel())
    if out_scores.size == 0 or in_scores.size == 0 or not (np.all(np.isfinite(out_scores))
                                                           and np.all(np.isfinite(in_scores))):
        raise ValueError("roc_metrics needs finite scores in both worlds")
    fprs = tuple(float(a) for a in fprs)
    grid = np.union1d(out_scores, in_scores)
    # the bootstrap resamples positions in ``grid`` (floats: what scipy resamples), not the scores themselves
    out_pos, in_pos = (np.searchsorted(grid, s).astype(float) for s in (out_scores, in_scores))
    statistic = _statistic(grid.size, fprs)
    point = statistic(out_pos, in_pos)
    fpr, tpr = _rates(_counts(grid.size, out_pos), _counts(grid.size, in_pos))
    fpr, tpr = fpr[0], tpr[0]
    at_fpr, accuracy_threshold = _thresholds(grid, fpr, tpr, fprs)
    if resamples is None:
        resamples = RESAMPLES if grid.size <= LARGE_SCORES else RESAMPLES_LARGE
    method, low, high = _intervals(out_pos, in_pos, statistic, confidence, seed, resamples, bca_max_scores,
                                   bootstrap_max_scores)

    def entry(k, **extra):
        interval = {} if method is None else {"low": float(low[k]), "high": float(high[k])}
        return {"value": float(point[k]), **interval, **extra}

    def shown(t):
        return None if not np.isfinite(t) else float(t)

    return {
        "note": NOTE,
        "confidence": float(confidence),
        "interval_method": method,
        "bootstrap": {"resamples": int(resamples), "seed": int(seed), "resampled": "each world independently",
                      "computed": method is not None,
                      "why_not": None if method is not None else ("no resamples asked" if resamples == 0 else
                                                                  f"more than {bootstrap_max_scores} scores")},
        "rule": "guess 'in' when score >= threshold (null threshold: never)",
        "tpr_at_fpr": [entry(k, fpr=a, threshold=shown(t), fpr_attained=f)
                       for k, (a, (t, f)) in enumerate(zip(fprs, at_fpr, strict=True))],
        "max_accuracy": entry(len(fprs), threshold=shown(accuracy_threshold)),
        "auroc_hull": entry(len(fprs) + 1),
    }
