"""``dpaudit calibrate``: noise for a target (epsilon, delta), or a check of the classic formula."""

from __future__ import annotations

from accounting.calibration import (
    calibrate_noise_multiplier,
    check_classic_calibration,
    classic_failure_threshold,
)
from accounting.errors import ConfigurationError
from reports.commands.common import (
    POSITIVE,
    PROBABILITY,
    RATE,
    STEPS,
    add_old_spelling,
    dumps,
    format_number,
    number_arg,
)
from reports.exit_codes import ExitCode


def add_parser(subparsers) -> None:
    from reports.commands.run_progress import add_progress_argument

    p = subparsers.add_parser(
        "calibrate",
        help="noise multiplier for a target (epsilon, delta)",
        description="Noise for a target, or --check-classic to test "
        "sigma = sqrt(2 ln(1.25/delta))/epsilon against the exact profile.",
        epilog="Exit codes: 0 calibrated (or the classic formula holds), 1 VIOLATION "
        "(the classic formula does not give its claim), 2 bad input.",
    )
    epsilon = number_arg("claim_epsilon", **POSITIVE)
    one = p.add_mutually_exclusive_group(required=True)  # required: one of the two spellings
    one.add_argument("--claim-epsilon", type=epsilon, help="the epsilon to claim: the least noise that gives it")
    add_old_spelling(one, "--epsilon", "--claim-epsilon", "claim_epsilon", type=epsilon)
    p.add_argument("--delta", required=True, type=number_arg("delta", **PROBABILITY), help="target delta")
    p.add_argument(
        "--rate", type=number_arg("rate", **RATE), help="sampling rate q in (0, 1] (required without --check-classic)"
    )
    p.add_argument(
        "--steps", type=number_arg("steps", **STEPS), help="number of releases T (required without --check-classic)"
    )
    p.add_argument(
        "--accountant",
        default=None,
        choices=["pld", "rdp", "moments", "prv"],
        help="accountant that must certify the target; default pld",
    )
    p.add_argument(
        "--neighbouring",
        default=None,
        choices=["add-remove", "replace-one"],
        help="neighbouring relation (replace-one doubles the sensitivity); default add-remove",
    )
    p.add_argument(
        "--check-classic",
        action="store_true",
        help="check the classic Gaussian calibration for one release (no subsampling; "
        "cannot be combined with --rate, --steps, --accountant or --neighbouring)",
    )
    p.add_argument("--format", default="table", choices=["table", "json"], help="output format; default table")
    add_progress_argument(p, help="no progress on stderr (the noise search's lines after 5 s, and those saying "
                          "that one evaluation runs long)")
    p.set_defaults(func=run)


# Options of the noise search, with their defaults; each defaults to None in the parser so that one given
# with --check-classic is refused even when it names the default.
CALIBRATION_ONLY = {"rate": None, "steps": None, "accountant": "pld", "neighbouring": "add-remove"}


def run(args) -> int:
    if args.check_classic:
        given = [f"--{name}" for name in CALIBRATION_ONLY if getattr(args, name) is not None]
        if given:
            raise ConfigurationError(
                "check-classic", f"checks one un-subsampled release and would ignore {', '.join(given)}; drop them"
            )
        return _check_classic(args)
    for name, default in CALIBRATION_ONLY.items():
        if getattr(args, name) is None and default is not None:
            setattr(args, name, default)
    for field in ("rate", "steps"):
        if getattr(args, field) is None:
            raise ConfigurationError(field, f"--{field} is required unless --check-classic is given")
    result = calibrate_noise_multiplier(
        args.claim_epsilon,
        args.delta,
        args.rate,
        int(args.steps),
        args.accountant,
        progress=None if args.no_progress else _progress_printer(args.accountant),
        announce=(lambda message: None) if args.no_progress else None,  # None: stderr
        neighbouring=args.neighbouring,
    )
    if args.format == "json":
        print(dumps(result.to_dict()))
    else:
        print(
            f"noise multiplier z = {format_number(result.noise_multiplier)} gives epsilon = "
            f"{format_number(result.achieved_epsilon)} <= {args.claim_epsilon:g} at delta = {args.delta!r} "
            f"({args.accountant}, q = {args.rate:g}, T = {int(args.steps)}, {args.neighbouring})"
        )
    return 0


def _progress_printer(accountant: str, quiet_for: float = 5.0, every: float = 5.0):
    """Progress of the noise search on stderr: nothing during the first ``quiet_for`` seconds, then a
    line at most every ``every`` seconds (which accountant, how many evaluations, the bracket)."""
    import sys
    import time

    start, last = time.perf_counter(), [0.0]

    def show(evaluations: int, low: float, high: float) -> None:
        elapsed = time.perf_counter() - start
        if elapsed >= quiet_for and elapsed - last[0] >= every:
            last[0] = elapsed
            bracket = f"between {low:.4g} and {high:.4g}" if 0 < low and high < float("inf") else "not bracketed yet"
            print(
                f"calibrate: {evaluations} evaluations of {accountant} in {elapsed:.0f} s; noise multiplier "
                f"{bracket} (search to 0.1%)",
                file=sys.stderr,
                flush=True,
            )

    return show


def _check_classic(args) -> int:
    check = check_classic_calibration(args.claim_epsilon, args.delta)
    threshold = classic_failure_threshold(args.delta)
    code = ExitCode.VIOLATION if check.violated else ExitCode.PASS
    if args.format == "json":
        print(dumps({**check.to_dict(), "fails_from_epsilon": threshold}))
        return code
    print(f"classic sigma/sensitivity = sqrt(2 ln(1.25/delta))/epsilon = {format_number(check.noise_multiplier)}")
    print(f"exact delta at epsilon = {args.claim_epsilon:g}: {format_number(check.true_delta)} "
          f"(claimed {args.delta!r})")
    if check.violated:
        print(
            f"VIOLATION: the classic calibration does not give ({args.claim_epsilon:g}, {args.delta!r})-DP; "
            f"the analytic calibration needs sigma/sensitivity = {format_number(check.analytic_noise_multiplier)}"
        )
    else:
        print(
            "holds: the classic calibration meets the claimed delta "
            f"(analytic calibration would need only {format_number(check.analytic_noise_multiplier)})"
        )
    if threshold is not None:
        print(f"for delta = {args.delta!r} the classic calibration fails from epsilon = {threshold:.2f}")
    return code
