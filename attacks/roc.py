"""Empirical ROC curve and AUC of a membership score (higher score = "canary present")."""

from __future__ import annotations

import numpy as np

from attacks.estimators.binomial import check_audit_inputs
from attacks.estimators.thresholds import as_sorted


def empirical_roc(scores_out, scores_in, max_points: int = 512) -> tuple[np.ndarray, np.ndarray, float]:
    """(fpr, tpr, auc) of the threshold attack "score >= t", from (0, 0) to (1, 1).

    The curve is evaluated at up to ``max_points`` thresholds (evenly spaced order statistics of each world's
    scores, plus the extremes); the AUC is exact over all scores (Mann-Whitney, ties counted one half).
    """
    out_scores, in_scores = check_audit_inputs(scores_out, scores_in, 0.0, 0.5)
    out_sorted, in_sorted = as_sorted(out_scores), as_sorted(in_scores)
    n_out, n_in = out_sorted.size, in_sorted.size
    # Mann-Whitney: AUC = P(in > out) + P(in == out) / 2, by binary search of the sorted in-scores.
    below = np.searchsorted(out_sorted, in_sorted, side="left")
    greater = float(below.sum(dtype=np.float64))
    np.minimum(below, n_out - 1, out=below)   # in place; entries with a tie are below n_out already
    tied = out_sorted[below] == in_sorted
    ties = 0.0
    if tied.any():
        ties = float((np.searchsorted(out_sorted, in_sorted[tied], side="right") - below[tied]).sum())
    auc = (greater + 0.5 * ties) / (float(n_in) * n_out)
    k = max(2, int(max_points) - 2)
    thresholds = np.unique(np.concatenate([out_sorted[np.linspace(0, n_out - 1, k // 2).astype(np.int64)],
                                           in_sorted[np.linspace(0, n_in - 1, k - k // 2).astype(np.int64)]]))
    thresholds = np.concatenate([[np.inf], thresholds[::-1]])
    fpr = (n_out - np.searchsorted(out_sorted, thresholds, side="left")) / n_out
    tpr = (n_in - np.searchsorted(in_sorted, thresholds, side="left")) / n_in
    fpr, tpr = np.concatenate([fpr, [1.0]]), np.concatenate([tpr, [1.0]])
    return fpr, tpr, auc
