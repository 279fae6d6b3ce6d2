"""Empirical ROC curve and AUC of a membership score (higher score = "canary present")."""

from __future__ import annotations

import numpy as np

from attacks.estimators.binomial import check_audit_inputs
from attacks.estimators.thresholds import as_sorted


def empirical_roc(scores_out, scores_in, max_points: int = 512) -> tuple[np.ndarray, np.ndarray, float]:
    """(fpr, tpr, auc) of the threshold attack "score >= t", from (0, 0) to (1, 1).

    The curve is evaluated at up to ``max_points`` thresholds (evenly spaced order statistics of the pooled
    scores, plus the extremes); the AUC is exact over all scores (Mann-Whitney, ties counted one half).
    """
    out_scores, in_scores = check_audit_inputs(scores_out, scores_in, 0.0, 0.5)
    out_sorted, in_sorted = as_sorted(out_scores), as_sorted(in_scores)
    n_out, n_in = out_sorted.size, in_sorted.size
    pooled = np.concatenate([out_sorted, in_sorted])
    order = np.argsort(pooled, kind="stable")       # a linear merge of two sorted runs
    merged, is_in = pooled[order], order >= n_out
    # Mann-Whitney: AUC = (R_in - n_in (n_in + 1) / 2) / (n_in n_out) with mid-ranks for ties.
    starts = np.flatnonzero(np.concatenate([[True], merged[1:] != merged[:-1]]))
    if starts.size == merged.size:
        rank_sum = float(np.flatnonzero(is_in).sum(dtype=np.float64)) + n_in
    else:
        sizes = np.diff(np.append(starts, merged.size))
        in_per_group = np.add.reduceat(is_in.astype(np.int64), starts)
        rank_sum = float(np.dot(in_per_group, starts + (sizes + 1) / 2.0))
    auc = (rank_sum - n_in * (n_in + 1) / 2.0) / (float(n_in) * n_out)
    positions = np.unique(np.linspace(0, merged.size - 1, max(2, int(max_points) - 2)).astype(np.int64))
    thresholds = np.unique(merged[positions])
    thresholds = np.concatenate([[np.inf], thresholds[::-1]])
    fpr = (n_out - np.searchsorted(out_sorted, thresholds, side="left")) / n_out
    tpr = (n_in - np.searchsorted(in_sorted, thresholds, side="left")) / n_in
    fpr, tpr = np.concatenate([fpr, [1.0]]), np.concatenate([tpr, [1.0]])
    return fpr, tpr, auc
