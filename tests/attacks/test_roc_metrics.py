"""Descriptive ROC metrics (``attacks.estimators.roc_metrics``): closed forms for Gaussian scores, a
brute-force ROC hull, order invariance and interval coverage.

Reference values: for "out" N(0, 1) and "in" N(mu, 1), the best threshold rule has TPR at FPR a equal to
Phi(mu - Phi^-1(1 - a)), maximum balanced accuracy Phi(mu / 2) and AUROC Phi(mu / sqrt 2) (closed forms).
"""

import numpy as np
import pytest
from scipy import spatial, stats

from attacks.estimators.roc_metrics import roc_metrics

MU = 1.5


def _gaussian(n, seed):
    rng = np.random.default_rng([seed, 29])
    return rng.normal(0.0, 1.0, n), rng.normal(MU, 1.0, n)


def test_closed_forms_for_gaussian_scores():
    """n = 20000 per world. Tolerances are 5 or more standard errors (TPR at FPR 0.01: the threshold's
    quantile error 0.027 times the density 0.28 plus the binomial 0.0035, about 0.008; accuracy and AUROC
    about 0.002), so a false failure has probability below 1e-5."""
    out_scores, in_scores = _gaussian(20_000, 0)
    m = roc_metrics(out_scores, in_scores, fprs=(0.01, 0.1), resamples=20)
    for entry in m["tpr_at_fpr"]:
        assert entry["value"] == pytest.approx(stats.norm.sf(stats.norm.isf(entry["fpr"]) - MU), abs=0.04)
        assert entry["fpr_attained"] <= entry["fpr"]
    assert m["max_accuracy"]["value"] == pytest.approx(stats.norm.cdf(MU / 2), abs=0.01)
    assert m["auroc_hull"]["value"] == pytest.approx(stats.norm.cdf(MU / np.sqrt(2)), abs=0.01)
    t = m["max_accuracy"]["threshold"]  # the optimal threshold is mu / 2 (quantile error about 0.02)
    assert t == pytest.approx(MU / 2, abs=0.15)
    assert m["interval_method"] == "BC" and m["bootstrap"]["seed"] == 0


def test_hull_auroc_and_thresholds_match_brute_force_with_ties():
    """Integer scores (many ties): the hull area from scipy.spatial.ConvexHull of the ROC points, and every
    figure attained by the threshold it names."""
    rng = np.random.default_rng(3)
    out_scores, in_scores = rng.integers(0, 6, 150).astype(float), rng.integers(1, 8, 120).astype(float)
    m = roc_metrics(out_scores, in_scores, fprs=(0.05, 0.3), resamples=50)
    values = np.unique(np.concatenate([out_scores, in_scores]))
    fpr = np.array([0.0] + [np.mean(out_scores >= t) for t in values[::-1]])
    tpr = np.array([0.0] + [np.mean(in_scores >= t) for t in values[::-1]])
    hull = spatial.ConvexHull(np.column_stack([np.append(fpr, 1.0), np.append(tpr, 0.0)]))
    assert m["auroc_hull"]["value"] == pytest.approx(hull.volume, abs=1e-12)
    for entry in m["tpr_at_fpr"]:
        t = entry["threshold"]
        assert entry["value"] == pytest.approx(np.mean(in_scores >= t))
        assert np.mean(out_scores >= t) <= entry["fpr"]
        assert entry["value"] == pytest.approx(tpr[fpr <= entry["fpr"]].max())
    t = m["max_accuracy"]["threshold"]
    acc = (np.mean(in_scores >= t) + np.mean(out_scores < t)) / 2
    assert m["max_accuracy"]["value"] == pytest.approx(acc) == pytest.approx(((tpr + 1 - fpr) / 2).max())
    assert m["interval_method"] == "BCa"


def test_shuffling_rows_changes_nothing():
    rng = np.random.default_rng(5)
    out_scores, in_scores = np.round(rng.normal(0, 1, 400), 1), np.round(rng.normal(1, 1, 300), 1)
    first = roc_metrics(out_scores, in_scores, resamples=100)
    again = roc_metrics(rng.permutation(out_scores), rng.permutation(in_scores), resamples=100)
    assert first == again


def test_constant_scores_are_chance():
    m = roc_metrics(np.zeros(50), np.zeros(50), resamples=50)
    assert m["auroc_hull"]["value"] == pytest.approx(0.5)
    assert m["max_accuracy"]["value"] == pytest.approx(0.5)
    assert all(e["value"] == 0.0 and e["threshold"] is None for e in m["tpr_at_fpr"])


@pytest.mark.slow
def test_bca_intervals_cover_on_a_few_seeds():
    """10 seeds, 200 scores per world, 95% BCa: each interval must cover the closed form at least 6 times.
    Measured coverage (20 seeds, 300 per world): 19, 19, 17 of 20 (the hull AUROC is biased upward at small
    n). With a true coverage of 0.85, P(at most 5 of 10) = 0.01; at 0.9 it is 0.0016."""
    truth = [stats.norm.sf(stats.norm.isf(0.05) - MU), stats.norm.cdf(MU / 2), stats.norm.cdf(MU / np.sqrt(2))]
    cover = np.zeros(3)
    for seed in range(10):
        out_scores, in_scores = _gaussian(200, seed + 100)
        m = roc_metrics(out_scores, in_scores, fprs=(0.05,), resamples=200, seed=seed)
        entries = [m["tpr_at_fpr"][0], m["max_accuracy"], m["auroc_hull"]]
        cover += [e["low"] <= t <= e["high"] for e, t in zip(entries, truth, strict=True)]
    assert np.all(cover >= 6), cover
