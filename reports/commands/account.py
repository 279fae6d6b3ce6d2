"""``dpaudit account``: epsilon of a subsampled Gaussian configuration from several accountants."""

from __future__ import annotations

from accounting import Composition, SubsampledGaussian, account_all
from accounting.crosscheck import disagreements
from accounting.registry import DEFAULT_ACCOUNTANTS, parse_accountant_names
from reports.commands.common import (
    POSITIVE,
    PROBABILITY,
    RATE,
    STEPS,
    dumps,
    format_number,
    number_arg,
    print_table,
)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("account", help="epsilon of a configuration, accountants side by side",
                              description="Epsilon of T releases of a subsampled Gaussian mechanism.")
    p.add_argument("--rate", required=True, type=number_arg("rate", **RATE), help="sampling rate q in (0, 1]")
    p.add_argument("--noise", required=True, type=number_arg("noise", **POSITIVE),
                   help="noise multiplier z (noise std / clip norm)")
    p.add_argument("--steps", required=True, type=number_arg("steps", **STEPS), help="number of releases T")
    p.add_argument("--delta", required=True, type=number_arg("delta", **PROBABILITY), help="target delta")
    p.add_argument("--neighbouring", default="add-remove", choices=["add-remove", "replace-one"],
                   help="neighbouring relation (replace-one charges twice the clip norm as sensitivity)")
    p.add_argument("--sampling", default="poisson", choices=["poisson", "fixed-size"],
                   help="Poisson sampling at rate q, or a fixed-size sample of q x population")
    p.add_argument("--population", type=number_arg("population", low=1, integer=True),
                   help="declared population (needed for fixed-size sampling)")
    p.add_argument("--accountants", default=",".join(DEFAULT_ACCOUNTANTS),
                   help="comma-separated, from moments,rdp,pld,prv,exact,dpa-rdp (default: all but dpa-rdp, "
                        "which repeats rdp's analysis through dp-accounting; name it to add it, or for fixed-size "
                        "sampling, which only it analyses)")
    p.add_argument("--format", default="table", choices=["table", "json"], help="output format")
    p.set_defaults(func=run)


def run(args) -> int:
    names = parse_accountant_names(args.accountants)
    mechanism = SubsampledGaussian(args.rate, args.noise, 1.0, sampling=args.sampling,
                                   neighbouring=args.neighbouring, population=args.population)
    results = account_all(Composition.of(mechanism, int(args.steps)), args.delta, names)
    notes = disagreements(results)
    if args.format == "json":
        print(dumps({
            "configuration": {"rate": args.rate, "noise_multiplier": args.noise, "steps": int(args.steps),
                              "delta": args.delta, "neighbouring": args.neighbouring,
                              "sampling": args.sampling, "population": args.population},
            "accountants": [r.to_dict() for r in results],
            "disagreements": notes,
        }))
        return 0
    print(f"{int(args.steps)} releases, q = {args.rate:g}, z = {args.noise:g}, {args.sampling} sampling, "
          f"{args.neighbouring} neighbours, delta = {args.delta:.4g}")
    rows = [[r.name, format_number(r.epsilon), r.status, r.reason] for r in results]
    print_table(["accountant", "epsilon", "status", "note"], rows)
    for r in results:
        dropped = (r.details or {}).get("orders_without_value")
        if dropped:
            print(f"note: {r.name} had no finite value at orders {dropped}")
        warnings = (r.details or {}).get("warnings")
        if warnings:
            print(f"note: {r.name} reported {len(warnings)} warning(s), e.g. {warnings[0]}")
    for note in notes:
        print(f"warning: {note}")
    return 0
