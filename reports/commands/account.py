"""``dpaudit account``: epsilon of a subsampled Gaussian configuration from several accountants."""

from __future__ import annotations

import math
import textwrap

from accounting import Composition, SubsampledGaussian, account_all
from accounting.crosscheck import disagreements
from accounting.errors import ConfigurationError
from accounting.registry import ACCOUNTANTS, parse_accountant_names
from accounting.zero_out import relation_note
from attacks.files import dumps_json
from reports.commands.common import (
    POSITIVE,
    PROBABILITY,
    RATE,
    STEPS,
    add_old_spelling,
    format_number,
    number_arg,
    print_table,
)
from reports.exit_codes import ExitCode

EPILOG = (
    "Every accountant runs by default; one that cannot analyse the configuration says why in its row "
    "(unsupported/failed). An epsilon of inf means no finite epsilon at this delta (exact: the "
    "configuration is not private there, e.g. noise too small to matter; others: their bound is "
    "infinite). Exit codes: 0 at least one accountant answered, 2 bad input, 3 no accountant could "
    "answer."
)


def add_parser(subparsers) -> None:

    from reports.commands.run_progress import add_progress_argument

    p = subparsers.add_parser(
        "account",
        help="epsilon of a configuration, accountants side by side",
        description="Epsilon of T releases of a subsampled Gaussian mechanism.",
        epilog=EPILOG,
    )
    p.add_argument("--rate", required=True, type=number_arg("rate", **RATE), help="sampling rate q in (0, 1]")
    noise = number_arg("noise_multiplier", **POSITIVE)
    one = p.add_mutually_exclusive_group(required=True)  # required: one of the two spellings
    one.add_argument("--noise-multiplier", type=noise, help="noise multiplier z (noise std / clip norm)")
    # the earlier spelling (README's commands), kept working but not shown: --noise-multiplier as `run`'s private
    # algorithms spell it (their --noise is a kind of noise)
    add_old_spelling(one, "--noise", "--noise-multiplier", "noise_multiplier", type=noise)
    p.add_argument("--steps", required=True, type=number_arg("steps", **STEPS), help="number of releases T")
    p.add_argument("--delta", required=True, type=number_arg("delta", **PROBABILITY), help="target delta")
    p.add_argument(
        "--neighbouring",
        default="add-remove",
        choices=["add-remove", "replace-one"],
        help="neighbouring datasets: add/remove one participant, or replace one (sensitivity "
        "2 x clip); default add-remove",
    )
    p.add_argument(
        "--sampling",
        default="poisson",
        choices=["poisson", "fixed-size"],
        help="Poisson sampling with probability q, or a fixed batch of round(q * population) "
        "without replacement; default poisson",
    )
    p.add_argument(
        "--population",
        type=number_arg("population", low=1, integer=True),
        help="declared population (fixed-size sampling only, where it is needed)",
    )
    p.add_argument(
        "--accountants",
        default=None,
        help=f"comma-separated subset of {','.join(ACCOUNTANTS)} (default: all, skipping with the reason one "
        "predicted to take over 10 s; one named here always runs, with progress on stderr)",
    )
    p.add_argument("--format", default="table", choices=["table", "json"], help="output format; default table")
    add_progress_argument(p, help="no progress on stderr (the lines saying that an accountant named in "
                          "--accountants runs long)")
    p.set_defaults(func=run)


def _notes(results) -> list[str]:
    notes = []
    for r in results:
        dropped = (r.details or {}).get("orders_without_value")
        if dropped:
            notes.append(
                f"note: {r.name} had no finite value at {len(dropped)} order(s) ({min(dropped):g} to {max(dropped):g})"
            )
        warnings = (r.details or {}).get("warnings")
        if warnings:
            notes.append(f"note: {r.name} reported {len(warnings)} warning(s), e.g. {warnings[0]}")
    return notes


def run(args) -> int:
    names = parse_accountant_names(args.accountants)
    if args.population is not None and args.sampling != "fixed-size":
        raise ConfigurationError(
            "population", "only fixed-size sampling uses it (Poisson sampling has no batch size); add "
            "--sampling fixed-size or drop --population"
        )
    mechanism = SubsampledGaussian(
        args.rate, args.noise_multiplier, 1.0, sampling=args.sampling, neighbouring=args.neighbouring,
        population=args.population,
    )
    insist = names if args.accountants is not None else ()
    silent = (lambda message: None) if args.no_progress else None  # None: the default, stderr
    results = account_all(Composition.of(mechanism, int(args.steps)), args.delta, names, insist=insist,
                          progress=silent)
    code = ExitCode.PASS if any(r.ok for r in results) else ExitCode.INCONCLUSIVE
    notes = disagreements(results)
    if args.format == "json":
        print(
            dumps_json(
                {
                    "configuration": {
                        "rate": args.rate,
                        "noise_multiplier": args.noise_multiplier,
                        "steps": int(args.steps),
                        "delta": args.delta,
                        "neighbouring": args.neighbouring,
                        "sampling": args.sampling,
                        "population": args.population,
                    },
                    "accountants": [r.to_dict() for r in results],
                    "disagreements": notes,
                    "neighbouring_note": relation_note(args.neighbouring),
                },
                indent=2,
            )
        )
        return code
    print(
        f"{int(args.steps)} releases, q = {args.rate:g}, z = {args.noise_multiplier:g}, {args.sampling} sampling, "
        f"{args.neighbouring} neighbours, delta = {args.delta!r}"
    )
    rows = [
        [r.name, "inf" if r.ok and math.isinf(r.epsilon) else format_number(r.epsilon), r.status, r.reason]
        for r in results
    ]
    print_table(["accountant", "epsilon", "status", "note"], rows)
    if relation_note(args.neighbouring):
        print(textwrap.fill(f"neighbours: {relation_note(args.neighbouring)}.", width=100, subsequent_indent="  "))
    for line in _notes(results):
        print(line)
    for note in notes:
        print(f"warning: {note}")
    if code != ExitCode.PASS:
        print("no accountant could answer this configuration (exit 3)")
    return code
