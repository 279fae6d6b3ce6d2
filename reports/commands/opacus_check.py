"""``dpaudit opacus-check --setup FILE.py:FUNCTION``: what a user's opacus (DP-SGD) set-up really runs, against
what opacus's accountant was told, with corrected epsilons from our accountants.

With --setup, FUNCTION (default make_setup) builds the set-up and returns its objects; with --train FUNCTION
(default main) is the user's own training, run as written (their loop, loader and optimizers; --argv is its
command line) and observed where it calls opacus (attacks.opacus_checks.observed). Naming the file runs its code.

The set-up FUNCTION takes no arguments and returns a dict with ``model``, ``optimizer``,
``data_loader`` (as ``make_private`` returned them), ``privacy_engine`` and ``epochs``, and optionally
``delta``, ``claimed_epsilon``, ``accounted_epochs`` or ``accounted_steps`` (see attacks/opacus_checks/load.py;
without the last two the steps are assumed to be the loop's, and the output says so). Naming the file runs its
code. Exit codes: 0 PASS (no critical finding), 1 VIOLATION (a critical
finding: the reported epsilon is below the corrected one), 2 bad input.
"""

from __future__ import annotations

from accounting.errors import ConfigurationError

SETUP_FALSE_ALARM, TRAIN_FALSE_ALARM, REPETITIONS, SEED, CONFIDENCE = 1e-6, 1e-3, 16, 0, 0.95  # the defaults


def add_parser(sub) -> None:

    from reports.commands.common import add_old_spelling, number_arg
    from reports.commands.run_progress import add_progress_argument
    from reports.exit_codes import EXIT_CODE_HELP

    p = sub.add_parser("opacus-check", help="check an opacus set-up's sampler, noise and steps against its accountant",
                       description=__doc__.split("\n\n")[1], epilog=EXIT_CODE_HELP)
    form = p.add_mutually_exclusive_group(required=True)
    form.add_argument("--setup", help="FILE.py:FUNCTION returning the set-up dict (default make_setup)")
    form.add_argument("--train", help="FILE.py:FUNCTION (default main): the user's own training, run as written and "
                      "observed "
                      "where it calls opacus (every private step, the noise, every other optimizer)")
    p.add_argument("--argv", dest="train_argv", default="", metavar="ARGS",
                   help="--train only: the training's command line (sys.argv[1:]), as one shell-quoted string, "
                   "e.g. '--epochs 1 --device cpu'")
    claim = number_arg("claim-epsilon", low=0.0, low_open=True)
    p.add_argument("--claim-epsilon", type=claim, default=None,
                   help="the epsilon claimed (default: with --train the last one the training asked its engine for; "
                   "with --setup the set-up's claimed_epsilon, else opacus's accountant over the planned steps)")
    # the earlier spelling (README's commands), kept working but not shown: --claim-epsilon as attack, estimate, plan
    add_old_spelling(p, "--claimed-epsilon", "--claim-epsilon", "claim_epsilon", type=claim)
    p.add_argument("--canaries", type=number_arg("canaries", low=0, integer=True), default=0,
                   help="--train only: gradient canaries inserted through the training's own private optimizer (each "
                   "in by a fair coin; one-run bounds against the claim); 0: none (default 0)")
    p.add_argument("--seed", type=number_arg("seed", low=0, high=2**32 - 1, integer=True), default=None,
                   help="--train only, with --canaries: seed of the canaries' coins, coordinates and sampling "
                   f"(default {SEED})")
    p.add_argument("--confidence", type=number_arg("confidence", low=0.0, high=1.0, low_open=True, high_open=True),
                   default=None, help=f"--train only, with --canaries: confidence of the canaries' one-run bounds "
                   f"(default {CONFIDENCE})")
    p.add_argument("--unit", choices=("record", "user"), default="record",
                   help="--train only: the unit the claim protects (user: records per user give a group epsilon)")
    p.add_argument("--user-key", default=None, help="--train only, with --unit user: each record's user, a field "
                   "of dict records, an index of tuple records, or FILE.py:FUNCTION called with the dataset (default: "
                   "identical records are taken as one user's)")
    p.add_argument("--delta", type=number_arg("delta", low=0.0, high=1.0, low_open=True, high_open=True),
                   default=None, help="delta of every epsilon (default: the set-up's delta, else 1e-5)")
    p.add_argument("--repetitions", type=number_arg("repetitions", low=2, integer=True), default=None,
                   help=f"--setup only: zero-gradient optimizer steps per measured batch size (default {REPETITIONS})")
    p.add_argument("--false-alarm", type=number_arg("false_alarm", low=0.0, high=0.5, low_open=True), default=None,
                   help="probability that the noise test flags a correct optimizer (default 1e-6 with --setup, 1e-3 "
                   "with --train)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output directory: DIR/report.json, the full check as JSON (made if missing)")
    add_progress_argument(p, help="no progress on stderr (a line as each stage starts, shown on a terminal only; "
                          "the training's own output is its own)")
    p.set_defaults(func=run)


def stage(args, text: str) -> None:
    """A progress line on stderr as a stage starts (on a terminal, unless ``--no-progress``; as ``run``'s)."""
    import sys

    from reports.commands.run_progress import progress_on

    if progress_on(args):
        print(f"dpaudit opacus-check: {text}", file=sys.stderr, flush=True)


def _loader_line(s: dict) -> str:
    split = ""
    if s.get("splitter_class"):
        split = (f" (logical batches; {s['splitter_class']} of a BatchMemoryManager: {s['physical_batches_per_epoch']} "
                 f"physical batches of at most {s['max_physical_batch_size']} per epoch)")
    return (f"  loader: {s['loader_class']} / {s['batch_sampler_class']} over {s['sampler_class']}: scheme "
            f"{s['scheme']}, {s['population']} records, len {s['loader_length']}, {s['batches_per_epoch']} batches "
            f"per epoch{split}, batch size mean {s['mean_batch_size']:.4g} (min {min(s['batch_sizes'])}, max "
            f"{max(s['batch_sizes'])}), worst per-record rate {s['worst_inclusion_rate']:.4g}")


def _steps_line(result: dict) -> str:
    n, steps = result["noise"], result["steps"]
    told = (f"  accountant told: noise multiplier {n['told_noise_multiplier']:.4g}, sample rate "
            f"{n['told_sample_rate']:.4g}")
    if steps.get("accounted_from", "loop") == "loop":
        return (f"{told}; steps not told (no accounted_epochs or accounted_steps): assumed to be the "
                f"{steps['run']} the loop runs")
    return f"{told}, {steps['accounted']} steps (from {steps['accounted_from']}); the loop runs {steps['run']} steps"


def summary_lines(result: dict) -> list[str]:
    from attacks.opacus_checks.records import DuplicateFacts, unit_line

    n = result["noise"]
    lines = [f"opacus check: verdict {result['verdict']} (reported epsilon {result['reported_epsilon']:.4g} by "
             f"{result['reported_by']}, delta {result['delta']:g})",
             _loader_line(result["sampler"]),
             *([f"  batches: {n['batch_form']}"] if n.get("batch_form") else []),
             _steps_line(result),
             f"  noise measured: multiplier {n['effective_noise_multiplier']:.4g} (upper limit "
             f"{n['effective_upper']:.4g}), std ~ batch size^{n['normalisation_slope']:.2f}, false-alarm "
             f"{n['false_alarm']:g}"]
    duplicates = (result.get("unit") or {}).get("duplicates")
    if duplicates is not None:
        lines.append("  unit: " + unit_line(DuplicateFacts(**duplicates)))
    for name, row in result["rows"].items():
        lines.append(f"  epsilon {row['epsilon']:9.4g}  [{name}] {row['analysis']}")
    for f in result["findings"]:
        lines.append(f"  {f['severity'].upper():8s} {f['code']}: {f['message']}")
    if not result["findings"]:
        lines.append("  no finding: the loader, the noise and the steps match what the accountant was told")
    return lines


def run(args) -> int:
    from attacks.opacus_checks.check import check_opacus_setup
    from reports.commands.common import report_path
    from reports.exit_codes import ExitCode

    if args.out is not None:
        args.report_target = report_path("out", args.out, "report.json")  # before the user's code runs
    if args.train is not None:
        return run_train(args)
    for name, flag in (("train_argv", "argv"), ("user_key", "user-key"), ("canaries", "canaries")):
        if getattr(args, name):
            raise ConfigurationError(flag, "applies to --train only")
    for name in ("seed", "confidence"):
        if getattr(args, name) is not None:
            raise ConfigurationError(name, "applies to --train only (with --canaries)")
    if args.unit != "record":
        raise ConfigurationError("unit", "applies to --train only")
    stage(args, f"building the set-up {args.setup}, reading its loader and measuring its noise")
    result = check_opacus_setup(args.setup, delta=args.delta,
                                repetitions=REPETITIONS if args.repetitions is None else args.repetitions,
                                false_alarm=SETUP_FALSE_ALARM if args.false_alarm is None else args.false_alarm,
                                claimed_epsilon=args.claim_epsilon)
    print("\n".join(summary_lines(result)))
    write_out(args, result)
    return int(ExitCode.VIOLATION if result["verdict"] == "VIOLATION" else ExitCode.PASS)


def write_out(args, result: dict) -> None:
    """``--out DIR``: the full check as DIR/report.json ("inf", never Infinity; no half-written file)."""
    if args.out is not None:
        from attacks.files import dumps_json
        from reports.commands.common import write_report

        write_report(args.report_target, dumps_json(result, indent=1))


def train_lines(result: dict) -> list[str]:
    from attacks.opacus_checks.observed import steps_analysis

    rows = result["rows"]
    lines = [f"opacus training check: verdict {result['verdict']} ({result['train']}, {result['seconds']:.1f} s)"]
    if rows:
        claim = "none" if result["claim"] is None else f"{result['claim']:.4g} ({result.get('claim_source')})"
        lines += [f"  ran: {rows['steps']} private steps, noise multipliers {rows['noise_multipliers']}, sample rates "
                  f"{[round(q, 6) for q in rows['sample_rates']]}, clips {rows['clips']}, "
                  f"{'Poisson' if rows['poisson'] else 'not Poisson'}, {rows['engines']} engine(s)"
                  + (f", up to {rows['accumulated']} Poisson batches summed per step (the rates are opacus's, "
                     "over them)" if rows.get("accumulated", 1) > 1 else ""),
                  f"  epsilon {rows['epsilon']:.4g} [{steps_analysis(rows)}] of the steps that ran (opacus's RDP "
                  f"{rows['opacus_rdp']:.4g}); "
                  f"the engine's accountant counts {rows['counted_steps']} steps; the training "
                  f"{_asked(rows['reported_epsilon'])}; claim tested {claim} at delta {result['delta']:g}"]
    power = rows.get("noise_power") if rows else None
    if power:
        lines.append(f"  power: the noise measured over {power['coordinates']} coordinates would refute noise below "
                     f"{power['refuted_ratio']:.3f} of the accounted with probability {power['probability']:g} "
                     f"(false alarm {power['false_alarm']:g})")
    lines += _premise_lines(result.get("premises") or ())
    lines += [f"  {f['severity'].upper():8s} {f['code']}: {f['message']}" for f in result["findings"]]
    return lines


def _premise_lines(premises) -> list[str]:
    """What of the claim's premises the run showed: a PASS proves the claim only when every one was observed."""
    from attacks.opacus_checks.premises import PREMISES

    seen = [PREMISES[p["premise"]] for p in premises if p["observed"]]
    lines = [f"  premise observed: {words}" for words in seen]
    lines += [f"  premise NOT observed: {PREMISES[p['premise']]} ({p['how']})" for p in premises if not p["observed"]]
    return lines


def run_train(args) -> int:
    import shlex

    from attacks.opacus_checks.observed import check_training
    from attacks.opacus_checks.train_run import run_user_training
    from reports.exit_codes import ExitCode

    if args.user_key is not None and args.unit != "user":
        raise ConfigurationError("user-key", "names each record's user: give --unit user too")
    if args.repetitions is not None:
        raise ConfigurationError("repetitions", "applies to --setup only (the train form measures the noise of "
                                 "the steps the training takes)")
    for name in ("seed", "confidence"):
        if getattr(args, name) is not None and not args.canaries:
            raise ConfigurationError(name, "applies to the canaries only; add --canaries K")
    confidence = CONFIDENCE if args.confidence is None else args.confidence
    try:
        argv = shlex.split(args.train_argv)
    except ValueError as exc:
        raise ConfigurationError("argv", f"cannot split {args.train_argv!r}: {exc}") from None
    delta = 1e-5 if args.delta is None else args.delta
    canaries = None
    if args.canaries:
        from attacks.probes.one_run import check_canary_count
        from dpfed.dpsgd.loop_canaries import LoopCanaries

        check_canary_count(int(args.canaries), delta, confidence)
        canaries = LoopCanaries(int(args.canaries), int(SEED if args.seed is None else args.seed))
    stage(args, f"running the training {args.train} (its own output follows)")
    training = run_user_training(args.train, argv, canaries=canaries)
    stage(args, "checking what the training ran against what its accountant was told")
    checked = check_training(training, delta, args.claim_epsilon, args.unit, args.user_key,
                             alpha=TRAIN_FALSE_ALARM if args.false_alarm is None else args.false_alarm,
                             confidence=confidence)
    findings = [{"code": f.code, "severity": f.severity, "message": f.message, "values": dict(f.values)}
                for f in checked["findings"]]
    verdict = "VIOLATION" if any(f["severity"] == "critical" for f in findings) else "PASS"
    result = {"train": args.train, "argv": argv, "delta": checked["rows"].get("delta", delta), "unit": args.unit,
              "claim": checked["claim"], "claim_source": checked.get("claim_source"),
              "verdict": verdict, "rows": checked["rows"], "findings": findings, "seconds": training.seconds,
              "canaries": checked.get("canaries"), "premises": checked.get("premises"),
              "observed": training.record}
    print("\n".join(train_lines(result)))
    write_out(args, result)
    return int(ExitCode.VIOLATION if verdict == "VIOLATION" else ExitCode.PASS)


def _asked(value) -> str:
    """What the training asked its engine: the epsilon it reported, or none."""
    return "never asked it for its epsilon" if value is None else f"reported epsilon {_figure(value)}"


def _figure(value) -> str:
    """An epsilon as printed (4 significant digits), or what the engine gave when it is not a number (None)."""
    return f"{value:.4g}" if isinstance(value, (int, float)) else str(value)
