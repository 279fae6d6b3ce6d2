"""Clopper-Pearson lower bound on epsilon: the default, assumption-free estimator.

Assumes only that the trials of each world are independent and identically distributed (each trial
a fresh run of the mechanism). Both directions are tested, delta is subtracted
(eps >= log((TPR_lb - delta) / FPR_ub) and eps >= log((TNR_lb - delta) / FNR_ub)), and the
threshold is chosen validly:

- ``"bonferroni"`` (default): order-statistic thresholds on a fixed rank grid in both directions
  (see ``thresholds``), each test at significance (1 - confidence) / (number of tests);
- ``"split"``: a random ``selection_fraction`` of the trials picks the best threshold and direction,
  the remaining trials evaluate that single test at the full significance.
"""

from __future__ import annotations

import numpy as np

from accounting.errors import ConfigurationError, require_number
from accounting.mechanisms import as_generator
from attacks.estimators.binomial import check_audit_inputs, threshold_epsilons
from attacks.estimators.thresholds import (
    ThresholdTests,
    as_sorted,
    evaluation_tests,
    order_statistic_tests,
    select_threshold,
    split_sorted,
)
from attacks.estimators.types import EpsilonBound

DEFAULT_CANDIDATES = 32  # ranks per direction for the Bonferroni grid


def _best(tests: ThresholdTests, delta: float, alpha_per_test: float):
    eps, lower, upper = threshold_epsilons(tests.lower_counts, tests.lower_totals, tests.upper_counts,
                                           tests.upper_totals, delta, alpha_per_test)
    i = int(np.argmax(eps))
    return i, eps, lower, upper


def _bound(method, tests, i, eps, lower, upper, delta, confidence, corrected_for, assumptions, extra):
    d = tests.direction[i]
    details = {
        "threshold_selection": extra.pop("threshold_selection"),
        "direction": str(d),
        "threshold": float(tests.threshold[i]),
        "lower_rate": "TPR" if d == "in-high" else "TNR",
        "lower_rate_bound": float(lower[i]),
        "upper_rate": "FPR" if d == "in-high" else "FNR",
        "upper_rate_bound": float(upper[i]),
        "counts": {"lower": int(tests.lower_counts[i]), "lower_total": int(tests.lower_totals[i]),
                   "upper": int(tests.upper_counts[i]), "upper_total": int(tests.upper_totals[i])},
        "thresholds_tried": int(corrected_for),
        "tests": tests.as_details(corrected_for),
        **extra,
    }
    return EpsilonBound(method=method, epsilon=float(eps[i]), delta=float(delta),
                        confidence=float(confidence), rigorous=True, assumptions=assumptions,
                        details=details)


def clopper_pearson_lower_bound(scores_out, scores_in, delta: float, confidence: float = 0.95,
                                threshold_selection: str = "bonferroni", candidates: int = DEFAULT_CANDIDATES,
                                selection_fraction: float = 0.5, rng=None) -> EpsilonBound:
    """Lower bound on epsilon at ``delta`` holding with probability ``confidence`` (see module docs).

    ``scores_out`` come from the world without the canary, ``scores_in`` from the world with it;
    a higher score means "canary present". ``rng`` (Generator or seed) is used by the split only.
    """
    out_scores, in_scores = check_audit_inputs(scores_out, scores_in, delta, confidence)
    candidates = int(require_number("candidates", candidates, low=1, integer=True))
    alpha = 1.0 - confidence
    if threshold_selection == "bonferroni":
        tests = order_statistic_tests(as_sorted(out_scores), as_sorted(in_scores), candidates)
        m = len(tests)
        i, eps, lower, upper = _best(tests, delta, alpha / m)
        return _bound("clopper-pearson", tests, i, eps, lower, upper, delta, confidence, m,
                      "Trials of each world are i.i.d.; thresholds are order statistics on a fixed rank "
                      "grid in both directions, Bonferroni-corrected.",
                      {"threshold_selection": "bonferroni"})
    if threshold_selection != "split":
        raise ConfigurationError("threshold_selection", f"must be 'bonferroni' or 'split', got "
                                 f"{threshold_selection!r}")
    require_number("selection_fraction", selection_fraction, low=0.0, high=1.0, low_open=True,
                   high_open=True)
    gen = as_generator(0 if rng is None else rng)
    out_sorted, in_sorted = as_sorted(out_scores), as_sorted(in_scores)
    sel_out, sel_in = split_sorted(out_sorted, in_sorted, gen, selection_fraction)
    if min(sel_out.size, sel_in.size, out_sorted.size - sel_out.size, in_sorted.size - sel_in.size) == 0:
        raise ConfigurationError("scores_out", "too few trials to split into selection and evaluation")
    direction, threshold = select_threshold(sel_out, sel_in, delta, alpha, candidates)
    tests = evaluation_tests(out_sorted, in_sorted, sel_out, sel_in, direction, threshold)
    i, eps, lower, upper = _best(tests, delta, alpha)
    return _bound("clopper-pearson-split", tests, i, eps, lower, upper, delta, confidence, 1,
                  "Trials of each world are i.i.d.; the threshold is chosen on a random "
                  f"{selection_fraction:.0%} of them and evaluated on the rest.",
                  {"threshold_selection": "split", "selection_fraction": float(selection_fraction),
                   "evaluation_trials": {"out": int(out_sorted.size - sel_out.size),
                                         "in": int(in_sorted.size - sel_in.size)}})
