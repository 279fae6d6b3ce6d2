"""Estimators: scores of trials without / with the canary in, lower bounds on epsilon out.

``scores_out`` come from the world WITHOUT the canary, ``scores_in`` from the world WITH it; a higher
score means "canary present". Every estimator returns an ``EpsilonBound``; only rigorous ones (the
Clopper-Pearson variants and one-run) may support a claim of violation.
"""

from __future__ import annotations

from attacks.estimators.bayesian import bayesian_lower_bound
from attacks.estimators.binomial import check_audit_inputs, cp_lower, cp_upper
from attacks.estimators.clopper_pearson import clopper_pearson_lower_bound
from attacks.estimators.fdp_one_run import fdp_one_run_from_scores, fdp_one_run_lower_bound
from attacks.estimators.gdp import gdp_lower_bound
from attacks.estimators.one_run import one_run_from_scores, one_run_lower_bound, one_run_p_value
from attacks.estimators.thresholds import as_sorted
from attacks.estimators.types import EpsilonBound

DEFAULT_METHODS = ("clopper-pearson", "bayesian-jeffreys", "gdp")
METHODS = ("clopper-pearson", "clopper-pearson-split", "bayesian-jeffreys", "gdp")
ONE_RUN_METHODS = ("one-run", "fdp-one-run", "one-run-split-median", "fdp-one-run-split-median", "one-run-weighted",
                   "one-run-gauss")
DEFAULT_ONE_RUN_METHODS = ("one-run", "fdp-one-run")
# gradient canaries scored by their log-likelihood ratio (``dpfed.dpsgd.loop_canaries``, the dp-sgd one-run probe):
# the continuous-signal bounds beside the guess-counting ones
CANARY_ONE_RUN_METHODS = ("one-run", "one-run-weighted", "fdp-one-run", "one-run-gauss")
# the estimators whose bounds hold in finite samples without a model (the only ones a verdict rests on)
RIGOROUS_METHODS = frozenset({"clopper-pearson", "clopper-pearson-split", "one-run", "one-run-split-median",
                              "one-run-weighted"})


def rigorous_confidence(confidence: float, methods) -> float:
    """The confidence each rigorous estimator of ``methods`` runs at so that the largest of their bounds holds at
    ``confidence``: 1 - (1 - confidence) / k over the k rigorous ones (Bonferroni), the split the verdict's
    p-values use; ``confidence`` itself for one."""
    k = sum(1 for m in methods if m in RIGOROUS_METHODS)
    return confidence if k <= 1 else 1.0 - (1.0 - float(confidence)) / k


def _at_joint_level(bounds, confidence: float, methods):
    """Each rigorous bound's details say the joint confidence of the best of them and the number it is split
    over (when more than one rigorous estimator ran)."""
    k = sum(1 for m in methods if m in RIGOROUS_METHODS)
    if k > 1:
        for bound in bounds:
            if bound.rigorous:
                bound.details["joint_confidence"] = float(confidence)
                bound.details["split_over"] = k
    return bounds


def check_methods(methods) -> tuple[str, ...]:
    """The estimators to run (``DEFAULT_METHODS`` for None); ConfigurationError for an empty list or an
    unknown name, so that a run can refuse them before drawing any trial."""
    from accounting.errors import ConfigurationError

    methods = DEFAULT_METHODS if methods is None else tuple(methods)
    if not methods:
        raise ConfigurationError("methods", f"empty: name at least one estimator of {', '.join(METHODS)}")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ConfigurationError("methods", f"unknown estimator {unknown[0]!r}; choose from {', '.join(METHODS)}")
    return methods


def estimate_all(scores_out, scores_in, delta: float, confidence: float = 0.95, methods=None,
                 rng=None) -> list[EpsilonBound]:
    """Run the score-based estimators (``DEFAULT_METHODS`` unless ``methods`` is given) on one audit.

    Scores are sorted once and shared. The rigorous estimators run at ``rigorous_confidence`` (the level split over
    them), so that the largest of their bounds holds at ``confidence``. One-run auditing needs canary inclusions
    rather than two worlds of trials: call ``one_run_from_scores`` / ``one_run_lower_bound`` directly.
    """
    from accounting.mechanisms import as_generator

    methods = check_methods(methods)
    out_scores, in_scores = check_audit_inputs(scores_out, scores_in, delta, confidence)
    out_sorted, in_sorted = as_sorted(out_scores), as_sorted(in_scores)
    gen = as_generator(0 if rng is None else rng)
    split = rigorous_confidence(confidence, methods)  # the best rigorous bound holds at ``confidence``
    results = []
    for method in methods:
        if method == "clopper-pearson":
            results.append(clopper_pearson_lower_bound(out_sorted, in_sorted, delta, split))
        elif method == "clopper-pearson-split":
            results.append(clopper_pearson_lower_bound(out_sorted, in_sorted, delta, split,
                                                       threshold_selection="split", rng=gen))
        elif method == "bayesian-jeffreys":
            results.append(bayesian_lower_bound(out_sorted, in_sorted, delta, confidence, rng=gen))
        elif method == "gdp":
            results.append(gdp_lower_bound(out_sorted, in_sorted, delta, confidence))
    return _at_joint_level(results, confidence, methods)


def estimate_one_run(scores, included, delta: float, confidence: float = 0.95,
                     guess_counts=None, methods=None, seed: int = 0, claim: float | None = None) -> list[EpsilonBound]:
    """One-run estimators on per-canary scores (``DEFAULT_ONE_RUN_METHODS`` unless ``methods`` names some of
    ``ONE_RUN_METHODS``): Steinke et al. (rigorous) and Gaussian f-DP (Mahloujifar et al., model-based), each
    the best of the same guess rules, Bonferroni over them; the ``*-split-median`` variants choose the rule
    on held-out canaries (``one_run_split``, splits drawn from ``seed``; ``guess_counts`` does not apply);
    ``one-run-weighted`` (rigorous: weighted guesses from the continuous scores, ``one_run_weighted``; ``claim``:
    its details also hold the claim's p-value) and ``one-run-gauss`` (model-based: the Gaussian view,
    ``one_run_gauss``). The rigorous ones run at ``rigorous_confidence`` (split over them), so that the largest of
    their bounds holds at ``confidence``."""
    from accounting.errors import ConfigurationError
    from attacks.estimators.one_run_gauss import one_run_gauss_from_scores
    from attacks.estimators.one_run_split import split_median_from_scores
    from attacks.estimators.one_run_weighted import one_run_weighted_from_scores

    methods = DEFAULT_ONE_RUN_METHODS if methods is None else tuple(methods)
    unknown = [m for m in methods if m not in ONE_RUN_METHODS]
    if unknown or not methods:
        raise ConfigurationError("methods", f"unknown or no one-run estimator {unknown[:1]}; choose from "
                                 f"{', '.join(ONE_RUN_METHODS)}")
    joint, confidence = confidence, rigorous_confidence(confidence, methods)  # rigorous ones at the split level
    run = {
        "one-run": lambda: one_run_from_scores(scores, included, delta, confidence, guess_counts),
        "fdp-one-run": lambda: fdp_one_run_from_scores(scores, included, delta, joint, guess_counts),
        "one-run-split-median": lambda: split_median_from_scores(scores, included, delta, confidence, seed=seed),
        "fdp-one-run-split-median": lambda: split_median_from_scores(scores, included, delta, joint,
                                                                     fdp=True, seed=seed),
        "one-run-weighted": lambda: one_run_weighted_from_scores(scores, included, delta, confidence, claim),
        "one-run-gauss": lambda: one_run_gauss_from_scores(scores, included, delta, joint),
    }
    return _at_joint_level([run[m]() for m in methods], joint, methods)


__all__ = [
    "CANARY_ONE_RUN_METHODS", "DEFAULT_METHODS", "DEFAULT_ONE_RUN_METHODS", "METHODS", "ONE_RUN_METHODS",
    "RIGOROUS_METHODS", "rigorous_confidence",
    "EpsilonBound", "bayesian_lower_bound",
    "clopper_pearson_lower_bound",
    "cp_lower", "cp_upper", "estimate_all", "estimate_one_run", "fdp_one_run_from_scores",
    "fdp_one_run_lower_bound", "gdp_lower_bound", "one_run_from_scores", "one_run_lower_bound",
    "one_run_p_value",
]
