"""``dpaudit estimate SCORES [--claim-epsilon E] [--delta D] [--out DIR]``: your own scores in, every valid
estimator's lower bound on epsilon out, and the verdict against a claim.

SCORES is a CSV with the header ``score,world`` (multi-run audit: one row per trial, world 0 without
the canary, 1 with it) or ``score,included`` (one-run audit: one row per canary, whether it was
inserted in the one run), or a ``.npy`` array (see ``reports/commands/estimate_input.py``). A higher
score must mean "canary present". Exit codes as for ``attack``: 0 PASS (or no claim), 1 VIOLATION,
2 bad input, 3 INCONCLUSIVE.

Threshold choice: the test scores are never reused to pick a threshold without correction.
``clopper-pearson`` and ``gdp`` try order-statistic thresholds on a fixed rank grid, both directions,
and Bonferroni-correct over all of them; ``clopper-pearson-split`` and ``bayesian-jeffreys`` pick the
threshold on a random half of the scores (``--seed``) and test it on the other half; the one-run
estimators try about 12 guess counts and Bonferroni-correct over them.
"""

from __future__ import annotations

import sys

from accounting.errors import ConfigurationError
from accounting.vocabulary import bound_kind
from reports.commands.estimate_input import SELECTION
from reports.commands.run_progress import NO_PROGRESS_ACCEPTED, add_progress_argument

SPLIT_MEDIAN_METHODS = ("one-run-split-median", "fdp-one-run-split-median")
# from the canaries' continuous scores: rigorous; model-based
SCORE_WEIGHTED_METHODS = ("one-run-weighted", "one-run-gauss")


def add_parser(subparsers) -> None:
    from reports.commands.common import number_arg
    from reports.exit_codes import EXIT_CODE_HELP

    parser = subparsers.add_parser(
        "estimate", help="lower bounds on epsilon from your own scores (multi-run or one-run)",
        description=__doc__.split("\n\n")[1], epilog=EXIT_CODE_HELP,
    )
    parser.add_argument("scores", help="CSV (header score,world or score,included) or .npy file")
    parser.add_argument("--kind", choices=["multi-run", "one-run"],
                        help="the audit the scores come from (needed for a plain (n, 2) .npy array)")
    parser.add_argument("--claim-epsilon", type=number_arg("claim_epsilon", low=0.0), help="claimed epsilon")
    parser.add_argument("--delta", type=number_arg("delta", low=0.0, high=1.0, low_open=True, high_open=True),
                        default=1e-5, help="delta of the bounds and of the claim (default 1e-5)")
    parser.add_argument("--confidence", default=0.95, help="confidence level in (0, 1) (default 0.95)",
                        type=number_arg("confidence", low=0.0, high=1.0, low_open=True, high_open=True))
    parser.add_argument("--seed", type=number_arg("seed", low=0, integer=True), default=0,
                        help="seed of the random selection half (default 0)")
    parser.add_argument("--fpr", action="append", type=number_arg("fpr", low=0.0, high=1.0, low_open=True,
                                                                  high_open=True),
                        help="FPR at which to report the attack's TPR (repeatable; default 0.001 and 0.01)")
    parser.add_argument("--resamples", type=number_arg("resamples", low=0, integer=True), default=None,
                        help="bootstrap resamples of the ROC metrics' intervals (0: none; default 1000, 200 above "
                             "20000 unique scores)")
    parser.add_argument("--one-run-split", action="store_true",
                        help="one-run files: also run the split-median estimators (guess rule chosen on held-out "
                             "canaries, median of 11 splits; stronger with many canaries, about 1 s per 10^4)")
    parser.add_argument("--out", metavar="DIR", help="output directory: report.json, report.md and report.html")
    parser.add_argument("--format", choices=["table", "json"], default="table", help="output format; default table")
    add_progress_argument(parser, help=NO_PROGRESS_ACCEPTED)
    parser.set_defaults(func=run)


def compute_bounds(data, delta: float, confidence: float, seed: int, split: bool = False,
                   claim: float | None = None) -> list:
    """Every estimator valid for ``data`` (``estimate_input.Scores``); ``split`` adds the one-run split-median
    estimators; ``claim``: the epsilon the verdict tests (``one-run-weighted`` computes its exact p-value)."""
    from attacks.estimators import DEFAULT_ONE_RUN_METHODS, METHODS, estimate_all, estimate_one_run

    if data.kind == "one-run":
        methods = DEFAULT_ONE_RUN_METHODS + SCORE_WEIGHTED_METHODS + (SPLIT_MEDIAN_METHODS if split else ())
        return estimate_one_run(data.scores, data.labels, delta, confidence, methods=methods, seed=int(seed),
                                claim=claim)
    out_scores, in_scores = data.worlds()
    return estimate_all(out_scores, in_scores, delta, confidence, methods=METHODS, rng=int(seed))


def ceiling(data, delta: float, confidence: float, methods=()) -> float:
    """The most the rigorous estimators could certify with this many scores (a perfect attack); for one-run scores,
    those of ``methods`` at their share of the level (``attacks.estimators.rigorous_confidence``)."""
    from attacks.estimators import rigorous_confidence
    from attacks.estimators.one_run import one_run_ceiling
    from attacks.estimators.one_run_weighted import one_run_weighted_ceiling
    from attacks.planner import max_certifiable_epsilon

    if data.kind == "one-run":
        share = rigorous_confidence(confidence, methods)
        top = one_run_ceiling(data.scores.size, delta, share)
        if "one-run-weighted" in methods:
            top = max(top, one_run_weighted_ceiling(data.scores.size, delta, share))
        return top
    out_scores, in_scores = data.worlds()
    return max_certifiable_epsilon(min(out_scores.size, in_scores.size), delta, confidence)


def decide(data, bounds, claim_epsilon: float, delta: float, confidence: float):
    """The verdict (``attacks.verdict.Verdict``) of the rigorous bounds against the claim."""
    from attacks import verdict as v
    from reports.commands.common import one_run_reason

    top = ceiling(data, delta, confidence, [b.method for b in bounds])
    if data.kind == "multi-run":
        # the verdict's ceiling is the estimators' own (``attacks.verdict.estimator_ceiling``)
        return v.decide(claim_epsilon, delta, bounds, min(b.size for b in data.worlds()), confidence)
    rigorous = [b for b in bounds if b.rigorous]
    best = max(rigorous, key=lambda b: b.epsilon, default=None)
    each = [v.bound_p_value(b, claim_epsilon, delta) for b in rigorous]
    p_values = [p for p in each if p is not None]
    p = min(1.0, len(p_values) * min(p_values)) if p_values else None
    status = (v.VIOLATION if p is not None and p <= 1.0 - confidence
              else v.INCONCLUSIVE if top <= claim_epsilon else v.PASS)
    reason = one_run_reason(status, None if best is None else (best.method, best.epsilon), p, top,
                            data.scores.size, claim_epsilon, delta, confidence,
                            decider=v.deciding_test(rigorous, each), rigorous=len(p_values))
    return v.Verdict(status, p, best, top, reason)


def inclusion_note(data) -> str | None:
    """A warning when a one-run file's inclusion bits look unlike independent fair coins (p < 1e-3)."""
    from scipy import stats

    if data.kind != "one-run":
        return None
    included, m = int(data.labels.sum()), int(data.labels.size)
    p = stats.binomtest(included, m, 0.5).pvalue
    if p >= 1e-3:
        return None
    return (f"{included} of {m} canaries included (binomial p = {p:.2g} for inclusion probability 1/2): the "
            "one-run bounds assume each canary was included independently with probability 1/2")


def metric_lines(metrics: dict) -> list[str]:
    """The descriptive ROC metrics (``attacks.estimators.roc_metrics``) as text lines."""
    def value(entry):
        interval = f" [{entry['low']:.4f}, {entry['high']:.4f}]" if "low" in entry else ""
        return f"{entry['value']:.4f}{interval}"

    def at(threshold):
        return "never 'in'" if threshold is None else f"score >= {threshold:.6g}"

    boot = metrics["bootstrap"]
    how = (f"{metrics['confidence']:.0%} {metrics['interval_method']} intervals, {boot['resamples']} resamples, "
           f"seed {boot['seed']}" if boot["computed"] else f"no intervals: {boot['why_not']}")
    lines = [f"ROC metrics (descriptive, not epsilon bounds, never in the verdict; {how})"]
    for entry in metrics["tpr_at_fpr"]:
        lines.append(f"  TPR at FPR {entry['fpr']:<9g}{value(entry):<30} {at(entry['threshold'])}")
    accuracy = metrics["max_accuracy"]
    lines.append(f"  {'max accuracy':<20}{value(accuracy):<30} {at(accuracy['threshold'])}  ((TPR + TNR) / 2)")
    lines.append(f"  {'AUROC (hull)':<20}{value(metrics['auroc_hull'])}")
    return lines


def compute_metrics(data, confidence: float, fprs, seed: int, resamples=None) -> dict:
    """TPR at the FPRs, hull AUROC and maximum accuracy of the scores, with seeded bootstrap intervals."""
    from attacks.estimators.roc_metrics import FPR_LEVELS, roc_metrics

    return roc_metrics(*data.worlds(), confidence=confidence, fprs=FPR_LEVELS if not fprs else tuple(fprs),
                       seed=int(seed), resamples=None if resamples is None else int(resamples))


def print_table(data, bounds, verdict, auc: float, out=None, metrics=None) -> None:
    out = sys.stdout if out is None else out
    low, high = data.worlds()
    names = ("not included", "included") if data.kind == "one-run" else ("world 0", "world 1")
    print(f"scores      {data.source}: {data.kind}, {low.size} {names[0]}, {high.size} {names[1]}", file=out)
    print(f"AUC         {auc:.4f} (descriptive)", file=out)
    if metrics is not None:
        print("\n".join(metric_lines(metrics)), file=out)
    note = inclusion_note(data)
    if note:
        print(f"WARNING     {note}", file=out)
    print(f"\n{'estimator':<24}{'epsilon >=':>11}{'delta':>10}{'conf.':>7}  {'kind':<28}threshold choice",
          file=out)
    for b in bounds:
        kind = bound_kind(b.rigorous)
        print(f"{b.method:<24}{b.epsilon:>11.4f}{b.delta:>10.3g}{b.confidence:>7.4g}  {kind:<28}"
              f"{SELECTION.get(b.method, '')}", file=out)
    if verdict is None:
        print("\nverdict     none (give --claim-epsilon)", file=out)
    else:
        p = "-" if verdict.p_value is None else f"{verdict.p_value:.3g}"
        print(f"\nverdict     {verdict.status}  (p = {p}, ceiling {verdict.ceiling:.4g}): {verdict.reason}",
              file=out)


def run(args) -> int:
    from attacks.attack import EXIT_CODES
    from attacks.files import dumps_json
    from attacks.roc import empirical_roc
    from reports.commands.estimate_input import read_scores

    if args.out is not None and args.claim_epsilon is None:
        raise ConfigurationError("out", "a report needs a claim to judge: give --claim-epsilon")
    if args.out is not None:
        from reports.commands.common import check_output_dir

        check_output_dir("out", args.out)
    data = read_scores(args.scores, args.kind)
    if args.one_run_split and data.kind != "one-run":
        raise ConfigurationError("one_run_split", "applies to one-run scores only; this file is multi-run")
    bounds = compute_bounds(data, args.delta, args.confidence, args.seed, split=args.one_run_split,
                            claim=args.claim_epsilon)
    fpr, tpr, auc = empirical_roc(*data.worlds())
    metrics = compute_metrics(data, args.confidence, args.fpr, args.seed, args.resamples)
    verdict = None
    if args.claim_epsilon is not None:
        verdict = decide(data, bounds, args.claim_epsilon, args.delta, args.confidence)
    if args.format == "json":
        print(dumps_json({"kind": data.kind, "source": data.source, "auc": auc, "roc_metrics": metrics,
                          "bounds": [b.to_dict() for b in bounds],
                          "threshold_choice": {b.method: SELECTION[b.method] for b in bounds},
                          "warning": inclusion_note(data),
                          "verdict": None if verdict is None else verdict.to_dict()}, indent=2))
    else:
        print_table(data, bounds, verdict, auc, metrics=metrics)
    if args.out is not None:
        from reports.commands.estimate_report import write_report

        paths = write_report(args, data, bounds, verdict, (fpr, tpr, auc), metrics)
        # with --format json stdout holds the JSON document alone
        print(f"wrote {', '.join(str(p) for p in paths)}", file=sys.stderr if args.format == "json" else sys.stdout)
    return 0 if verdict is None else EXIT_CODES[verdict.status]
