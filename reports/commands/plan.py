"""``dpaudit plan``: the largest epsilon a trial budget can certify, or the trials a target needs."""

from __future__ import annotations

import json

from accounting.errors import require_number
from attacks.planner import (
    estimator_ceiling,
    max_certifiable_epsilon,
    single_threshold_trials_needed,
    trials_needed,
)
from reports.commands.common import add_old_spelling, number_arg
from reports.commands.run_progress import NO_PROGRESS_ACCEPTED, add_progress_argument

MAX_TRIALS = 1e18


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="what an attack budget can certify (statistical ceiling of a perfect attack)",
        description="Before running an attack: the largest epsilon N trials per world can certify (for a "
        "perfect attack at one threshold fixed in advance, and for the default Bonferroni "
        "Clopper-Pearson estimator, which the audit uses), or the trials a target epsilon needs.",
    )
    parser.add_argument("--trials", type=float, help="trials per world")
    parser.add_argument("--delta", type=float, required=True, help="delta of the claim to certify against")
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence of the bound (default 0.95)")
    parser.add_argument(
        "--probe",
        help="also print how `dpaudit attack PROBE --trials N` would run (reduction, "
        "batches, pilot, memory), or why it cannot",
    )
    parser.add_argument("--workers", type=number_arg("workers", low=1, integer=True),
                        help="worker processes of the planned attack, each running a batch (default 1)")
    parser.add_argument(
        "--claim-epsilon",
        type=float,
        help="the claim to certify against: print the trials it needs; with --probe and --trials also the power of "
        "the budget against it (the noise fraction refuted with probability 0.9, and the trials that refute half "
        "the noise)",
    )
    add_old_spelling(parser, "--target-epsilon", "--claim-epsilon", "claim_epsilon", type=float)
    add_progress_argument(parser, help=NO_PROGRESS_ACCEPTED)
    parser.add_argument("--format", choices=["table", "json"], default="table", help="output format")
    parser.set_defaults(func=run, _parser=parser)


def attack_plan(probe_name: str, trials, workers: int | None, delta: float = 1e-5, confidence: float = 0.95) -> dict:
    """The run plan of an attack (``attacks.run_plan``) as a dict; ConfigurationError if it cannot run (a probe
    another command runs is refused as ``attack`` refuses it). A one-run probe runs once with ``trials`` canaries:
    its plan is that run and the most the one-run estimators can certify with it."""
    import dataclasses

    from attacks.probes import get_probe
    from attacks.run_plan import check_trial_count, plan_run
    from reports.commands.attack import refuse_run_elsewhere

    refuse_run_elsewhere(probe_name)
    probe = get_probe(probe_name)
    if probe.one_run:
        from accounting.errors import ConfigurationError
        from attacks.estimators.one_run import one_run_ceiling

        if workers is not None:
            raise ConfigurationError("workers", f"{probe_name} is a one-run probe: it runs once in this process")
        from reports.commands.attack_one_run import check_one_run_memory

        canaries = check_trial_count(trials)
        check_one_run_memory(probe, canaries)  # as attack refuses it
        ceiling = one_run_ceiling(canaries, delta, confidence)
        return {"one_run": True, "canaries": canaries, "one_run_ceiling": ceiling,
                "summary": f"a one-run probe: one run in this process with {canaries} canaries (--trials counts "
                           f"them); the one-run estimators certify at most epsilon = {ceiling:.4f} with them"}
    plan = plan_run(probe, check_trial_count(trials), workers=workers or 1)
    return {**dataclasses.asdict(plan), "summary": plan.describe()}


def budget_power(probe_name: str, trials, claim_epsilon, delta, confidence) -> dict | None:
    """``attacks.planner.noise_fraction_power`` of a named probe, as a dict (None: no Gaussian reduction)."""
    from attacks.planner import noise_fraction_power
    from attacks.probes import get_probe

    require_number("claim_epsilon", claim_epsilon, low=0, low_open=True, high=700)
    power = noise_fraction_power(get_probe(probe_name), int(trials), claim_epsilon, delta, confidence)
    return None if power is None else power.to_dict()


def run(args) -> int:
    if args.trials is None and args.claim_epsilon is None:
        args._parser.error("give --trials N or --claim-epsilon E (or both)")
    if args.trials is not None:  # the threshold grid counts trials in 64-bit integers
        require_number("trials", args.trials, low=1, high=MAX_TRIALS, integer=True)
    if args.workers is not None and args.probe is None:
        args._parser.error("--workers needs --probe and --trials")
    result = {"delta": args.delta, "confidence": args.confidence}
    if args.trials is not None:
        result["trials"] = args.trials
        result["max_certifiable_epsilon"] = max_certifiable_epsilon(args.trials, args.delta, args.confidence)
        result["default_estimator_ceiling"] = estimator_ceiling(args.trials, args.delta, args.confidence)
    if args.probe is not None:
        if args.trials is None:
            args._parser.error("--probe needs --trials")
        result["attack_plan"] = attack_plan(args.probe, args.trials, args.workers, args.delta, args.confidence)
        if args.claim_epsilon is not None:
            result["power"] = budget_power(args.probe, args.trials, args.claim_epsilon, args.delta, args.confidence)
    if args.claim_epsilon is not None:
        result["claim_epsilon"] = args.claim_epsilon
        result["trials_needed"] = trials_needed(args.claim_epsilon, args.delta, args.confidence)
        result["single_threshold_trials_needed"] = single_threshold_trials_needed(
            args.claim_epsilon, args.delta, args.confidence
        )
    if args.format == "json":
        print(json.dumps(result, indent=2))
        return 0
    level = f"{100 * args.confidence:.12g}% confidence, delta = {args.delta!r}"  # as given, unrounded
    if "max_certifiable_epsilon" in result:
        print(
            f"With {int(args.trials)} trials per world ({level}) no attack can certify more than "
            f"epsilon = {result['max_certifiable_epsilon']:.4f}."
        )
        print(
            "The default Clopper-Pearson estimator, correcting for its threshold search, certifies "
            f"at most {result['default_estimator_ceiling']:.4f} (the verdict's ceiling in `attack`)."
        )
    if "attack_plan" in result:
        print(f"{args.probe}: {result['attack_plan']['summary']}")
    if args.claim_epsilon is not None and args.probe is not None:
        power = result["power"]
        print(f"power against epsilon = {args.claim_epsilon:g}: " + (
            power["sentence"] if power else "not computed (the probe reduces to no Gaussian mechanism)"))
    if "trials_needed" in result:
        print(
            f"Certifying epsilon = {args.claim_epsilon:g} ({level}) with the default Clopper-Pearson "
            f"estimator (the one `attack` and `audit` run) needs at least {result['trials_needed']} trials per "
            f"world, even with a perfect attack (one threshold fixed in advance would need "
            f"{result['single_threshold_trials_needed']})."
        )
    return 0
