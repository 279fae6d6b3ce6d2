"""Estimators, ROC and score summaries from counts over a pre-fixed threshold grid (see ``grid``).

The same methods as on sorted scores, with the thresholds fixed by an independent pilot:

- ``clopper-pearson`` (rigorous): the pilot's chosen tests, Bonferroni over their number;
- ``clopper-pearson-split`` (rigorous): the pilot's single best test at the full significance (the pilot
  is the selection half of a split);
- ``bayesian-jeffreys`` (not rigorous): Jeffreys posteriors of the error rates of that best test;
- ``gdp`` (model-based): the largest certified mu over every grid test, Bonferroni over all of them.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from accounting.errors import ConfigurationError
from accounting.exact import gaussian_epsilon
from attacks.estimators.bayesian import jeffreys_bound
from attacks.estimators.binomial import cp_lower, cp_upper
from attacks.estimators.clopper_pearson import _best, _bound
from attacks.estimators.grid import ThresholdGrid, grid_tests
from attacks.estimators.types import EpsilonBound

COUNTS_ASSUMPTIONS = (
    "Trials of each world are i.i.d.; thresholds were fixed on an independent pilot "
    "batch before the test trials were drawn"
)


def _check(grid: ThresholdGrid, counts_out, counts_in):
    for name, counts in (("counts_out", counts_out), ("counts_in", counts_in)):
        if counts is None or np.shape(counts) != (grid.size,) or counts[: grid.edges.size + 1].sum() < 1:
            raise ConfigurationError(name, "needs a counts vector over the grid with at least one trial")
    return np.asarray(counts_out, float), np.asarray(counts_in, float)


def counts_clopper_pearson(grid, counts_out, counts_in, delta, confidence, single: bool = False):
    """Clopper-Pearson lower bound from the pilot-chosen tests (``single``: the first, uncorrected)."""
    counts_out, counts_in = _check(grid, counts_out, counts_in)
    edges, directions = grid.test_edges, grid.test_directions
    if single:
        edges, directions = edges[:1], directions[:1]  # the pilot's best prediction comes first
    tests = grid_tests(grid, counts_out, counts_in, edges, directions)
    m = len(tests)
    i, eps, lower, upper = _best(tests, delta, (1.0 - confidence) / m)
    method = "clopper-pearson-split" if single else "clopper-pearson"
    return _bound(
        method,
        tests,
        i,
        eps,
        lower,
        upper,
        delta,
        confidence,
        m,
        COUNTS_ASSUMPTIONS + ("; one test at full significance." if single else f"; Bonferroni over its {m} tests."),
        {"threshold_selection": "pilot", "reduction": "counts", "grid_size": int(grid.edges.size)},
    )


def counts_gdp(grid, counts_out, counts_in, delta, confidence) -> EpsilonBound:
    """Model-based GDP bound over every grid test (both directions), Bonferroni over all of them."""
    counts_out, counts_in = _check(grid, counts_out, counts_in)
    tests = grid_tests(grid, counts_out, counts_in)
    m = len(tests)
    alpha = (1.0 - confidence) / m / 2
    lower = cp_lower(tests.lower_counts, tests.lower_totals, alpha)
    upper = cp_upper(tests.upper_counts, tests.upper_totals, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        mus = special.ndtri(lower) - special.ndtri(upper)
    mus = np.where(np.isfinite(mus) & (mus > 0), mus, 0.0)
    i = int(np.argmax(mus))
    mu = float(mus[i])
    return EpsilonBound(
        method="gdp",
        epsilon=gaussian_epsilon(mu, delta) if mu > 0 else 0.0,
        delta=float(delta),
        confidence=float(confidence),
        rigorous=False,
        assumptions="Model-based: assumes a Gaussian trade-off curve (mu-GDP); mu bounded with "
        "Clopper-Pearson over a pilot-fixed threshold grid, Bonferroni-corrected.",
        details={
            "mu_lower_bound": mu,
            "direction": str(tests.direction[i]),
            "threshold": float(tests.threshold[i]),
            "lower_rate_bound": float(lower[i]),
            "upper_rate_bound": float(upper[i]),
            "thresholds_tried": int(m),
            "reduction": "counts",
        },
    )


def counts_bayesian(grid, counts_out, counts_in, delta, confidence, rng, draws: int = 100_000) -> EpsilonBound:
    """Jeffreys credible bound of epsilon at the pilot's best test (not a frequentist guarantee)."""
    counts_out, counts_in = _check(grid, counts_out, counts_in)
    tests = grid_tests(grid, counts_out, counts_in, grid.test_edges[:1], grid.test_directions[:1])
    lower, lower_total = int(tests.lower_counts[0]), int(tests.lower_totals[0])
    upper, upper_total = int(tests.upper_counts[0]), int(tests.upper_totals[0])
    if tests.direction[0] == "in-high":  # lower = TP of the in world, upper = FP of the out world
        tp, fn, fp, tn = lower, lower_total - lower, upper, upper_total - upper
    else:  # lower = TN of the out world, upper = FN of the in world
        tn, fp, fn, tp = lower, lower_total - lower, upper, upper_total - upper
    details = {"threshold": float(tests.threshold[0]), "direction": str(tests.direction[0]), "reduction": "counts"}
    return jeffreys_bound(
        fp, tn, fn, tp, delta, confidence, draws, rng, "threshold chosen on the pilot batch.", details
    )


def estimate_all_counts(
    grid, counts_out, counts_in, delta, confidence=0.95, methods=None, rng=None
) -> list[EpsilonBound]:
    """Every requested estimator (``attacks.estimators.METHODS``) from counts over ``grid``."""
    from accounting.mechanisms import as_generator
    from attacks.estimators import check_methods

    methods = check_methods(methods)
    gen = as_generator(0 if rng is None else rng)
    results = []
    for method in methods:
        if method in ("clopper-pearson", "clopper-pearson-split"):
            results.append(
                counts_clopper_pearson(
                    grid, counts_out, counts_in, delta, confidence, single=method == "clopper-pearson-split"
                )
            )
        elif method == "bayesian-jeffreys":
            results.append(counts_bayesian(grid, counts_out, counts_in, delta, confidence, gen))
        else:
            results.append(counts_gdp(grid, counts_out, counts_in, delta, confidence))
    return results


def roc_from_counts(grid, counts_out, counts_in) -> tuple[np.ndarray, np.ndarray, float]:
    """(fpr, tpr, auc) of "score > t" at every grid threshold, from (0, 0) to (1, 1); the AUC counts
    pairs in the same bin as ties (one half), so it is exact up to the grid's resolution."""
    g = grid.edges.size
    hist_out, hist_in = np.asarray(counts_out[: g + 1], float), np.asarray(counts_in[: g + 1], float)
    n_out, n_in = hist_out.sum(), hist_in.sum()
    above_out = n_out - np.cumsum(hist_out)[:g]
    above_in = n_in - np.cumsum(hist_in)[:g]
    fpr = np.concatenate([[0.0], above_out[::-1] / n_out, [1.0]])
    tpr = np.concatenate([[0.0], above_in[::-1] / n_in, [1.0]])
    below_out = np.concatenate([[0.0], np.cumsum(hist_out)[:-1]])  # out scores in lower bins
    auc = float((hist_in * (below_out + 0.5 * hist_out)).sum() / (n_in * n_out))
    return fpr, tpr, auc


def summarise_counts(grid, counts) -> dict:
    """Count, mean, standard deviation, extremes and grid-resolution quantiles of one world's scores."""
    g = grid.edges.size
    n, total, squares, low, high = (float(v) for v in counts[g + 1 :])
    cumulative = np.cumsum(counts[: g + 1])

    def quantile(p):
        b = int(np.searchsorted(cumulative, p * n, side="left"))
        return float(grid.edges[min(b, g - 1)]) if g else low

    mean = total / n
    return {
        "count": int(n),
        "mean": mean,
        "std": float(np.sqrt(max(squares / n - mean * mean, 0.0))),
        "min": low,
        "q01": quantile(0.01),
        "median": quantile(0.5),
        "q99": quantile(0.99),
        "max": high,
        "quantiles": "grid resolution",
    }
