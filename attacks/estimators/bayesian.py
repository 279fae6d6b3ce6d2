"""Bayesian estimate (Zanella-Beguelin et al. 2023): Jeffreys posteriors of the two error rates.

The threshold and direction are picked on a random half of the trials (as the split Clopper-Pearson
does); on the other half the error rates get independent Jeffreys posteriors
FPR ~ Beta(FP + 1/2, TN + 1/2), FNR ~ Beta(FN + 1/2, TP + 1/2), which are pushed through
eps(FPR, FNR) = max(log((1 - delta - FNR) / FPR), log((1 - delta - FPR) / FNR), 0). The result is a
*credible* interval: a statement about the posterior, not a frequentist guarantee (``rigorous=False``).
"""

from __future__ import annotations

import numpy as np

from accounting.errors import require_number
from accounting.mechanisms import as_generator
from attacks.estimators.binomial import check_audit_inputs
from attacks.estimators.thresholds import as_sorted, evaluation_tests, select_threshold, split_sorted
from attacks.estimators.types import EpsilonBound


def jeffreys_epsilon_samples(fp: int, tn: int, fn: int, tp: int, delta: float, draws: int, gen) -> np.ndarray:
    """Posterior draws of eps(FPR, FNR) under independent Jeffreys posteriors of the two error rates."""
    fpr = gen.beta(fp + 0.5, tn + 0.5, size=draws)
    fnr = gen.beta(fn + 0.5, tp + 0.5, size=draws)
    with np.errstate(divide="ignore", invalid="ignore"):
        samples = np.maximum(np.log((1 - delta - fnr) / fpr), np.log((1 - delta - fpr) / fnr))
    return np.maximum(np.nan_to_num(samples, nan=0.0, posinf=709.0, neginf=0.0), 0.0)


def bayesian_lower_bound(
    scores_out,
    scores_in,
    delta: float,
    confidence: float = 0.95,
    rng=None,
    posterior_draws: int = 100_000,
    candidates: int = 32,
    selection_fraction: float = 0.5,
) -> EpsilonBound:
    """Lower end of the one-sided ``confidence`` credible bound of epsilon (and the two-sided interval)."""
    out_scores, in_scores = check_audit_inputs(scores_out, scores_in, delta, confidence)
    draws = int(require_number("posterior_draws", posterior_draws, low=100, integer=True))
    gen = as_generator(0 if rng is None else rng)
    out_sorted, in_sorted = as_sorted(out_scores), as_sorted(in_scores)
    sel_out, sel_in = split_sorted(out_sorted, in_sorted, gen, selection_fraction)
    if min(sel_out.size, sel_in.size, out_sorted.size - sel_out.size, in_sorted.size - sel_in.size) == 0:
        sel_out, sel_in = out_sorted[:0], in_sorted[:0]  # too few trials to split: median threshold
        direction, threshold = "in-high", float(np.median(np.concatenate([out_scores, in_scores])))
    else:
        direction, threshold = select_threshold(sel_out, sel_in, delta, 1.0 - confidence, candidates)
    tests = evaluation_tests(out_sorted, in_sorted, sel_out, sel_in, direction, threshold)
    n_out, n_in = out_sorted.size - sel_out.size, in_sorted.size - sel_in.size
    if direction == "in-high":  # "in" when score > t
        tp, fp = int(tests.lower_counts[0]), int(tests.upper_counts[0])
        tn, fn = n_out - fp, n_in - tp
    else:  # "out" when score < t
        tn, fn = int(tests.lower_counts[0]), int(tests.upper_counts[0])
        fp, tp = n_out - tn, n_in - fn
    return jeffreys_bound(
        fp,
        tn,
        fn,
        tp,
        delta,
        confidence,
        draws,
        gen,
        "threshold chosen on a held-out half.",
        {"threshold": threshold, "direction": direction},
    )


def jeffreys_bound(fp, tn, fn, tp, delta, confidence, draws, gen, selection: str, details: dict) -> EpsilonBound:
    """The credible bound from a confusion matrix (Jeffreys posteriors of FPR and FNR)."""
    samples = jeffreys_epsilon_samples(fp, tn, fn, tp, delta, draws, gen)
    tail = 1.0 - confidence
    low, high = np.quantile(samples, [tail / 2, 1 - tail / 2])
    return EpsilonBound(
        method="bayesian-jeffreys",
        epsilon=float(np.quantile(samples, tail)),
        delta=float(delta),
        confidence=float(confidence),
        rigorous=False,
        assumptions="Bayesian credible bound (Jeffreys priors on FPR and FNR), not a frequentist guarantee; "
        + selection,
        details={
            **details,
            "counts": {"tp": int(tp), "fn": int(fn), "fp": int(fp), "tn": int(tn)},
            "credible_interval": [float(low), float(high)],
            "posterior_median": float(np.median(samples)),
            "posterior_draws": draws,
        },
    )
