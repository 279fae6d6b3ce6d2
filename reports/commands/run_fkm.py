"""``dpaudit run fkm|dp-fkm``: bandit convex optimisation (FKM) and our private variant DP-FKM.

Prints the expected regret over rounds (mean and standard error over runs) next to the corrected
bound of notes C.3, and for DP-FKM the guarantee of the run from every accountant: at event level one
Gaussian release for the whole run, at dataset level T subsampled Gaussians. Writes a JSON result and a
regret plot to ``--out``.
"""

from __future__ import annotations

import functools

from accounting.errors import ConfigurationError
from reports.commands.common import POSITIVE, PROBABILITY, RATE, STEPS, add_old_spelling, format_number, number_arg
from reports.commands.run_output import (
    add_run_arguments,
    claim_run_outputs,
    privacy_section,
    regret_summary,
    write_outputs,
)
from reports.commands.run_progress import progress_bar

ALGORITHM_HELP = {
    "fkm": "FKM bandit convex optimisation (one-point gradient, projected OGD; no privacy)",
    "dp-fkm": "DP-FKM (ours): clipped, Gaussian-noised loss feedback (event or dataset level)",
}


def add_algorithms(subparsers) -> None:
    for name, help_text in ALGORITHM_HELP.items():
        p = subparsers.add_parser(name, help=help_text)
        p.add_argument("--dim", type=number_arg("dim", **STEPS), default=5, help="dimension n (default 5)")
        p.add_argument("--horizon", type=number_arg("horizon", **STEPS), default=10_000, help="T (default 1e4)")
        p.add_argument("--radius", type=number_arg("radius", **POSITIVE), default=1.0, help="radius R of the ball K")
        p.add_argument("--loss", default="linear", help="linear (default) | quadratic")
        p.add_argument(
            "--exploration",
            type=number_arg("exploration", **POSITIVE),
            default=None,
            help="exploration radius (FKM's delta, not the privacy delta; default: the corrected optimum of notes C.3)",
        )
        p.add_argument(
            "--step",
            type=number_arg("step", **POSITIVE),
            default=None,
            help="step size eta (default: the corrected optimum)",
        )
        if name == "dp-fkm":
            p.add_argument("--unit", choices=("event", "dataset"), default="event",
                           help="unit of privacy: event (default: one loss) or dataset (one record)")
            epsilon = number_arg("claim_epsilon", **POSITIVE)
            p.add_argument("--claim-epsilon", type=epsilon, default=None,
                           help="event level: the epsilon to claim; the Gaussian is calibrated to it (default 1; exact "
                           "calibration)")
            add_old_spelling(p, "--epsilon", "--claim-epsilon", "claim_epsilon", type=epsilon)
            p.add_argument("--delta", type=number_arg("delta", **PROBABILITY), default=1e-5, help="default 1e-5")
            p.add_argument(
                "--noise-multiplier",
                dest="noise_multiplier",
                type=number_arg("noise_multiplier", **POSITIVE),
                default=None,
                help="sigma (event level: instead of --claim-epsilon)",
            )
            p.add_argument(
                "--records",
                type=number_arg("records", **STEPS),
                default=None,
                help="dataset level: number of records (default 200)",
            )
            p.add_argument(
                "--rate",
                type=number_arg("rate", **RATE),
                default=None,
                help="dataset level: Poisson sampling rate (default 0.1)",
            )
        add_run_arguments(p, private=name == "dp-fkm")
        p.set_defaults(func=functools.partial(run_command, name))


def execute(algorithm: str, args, on_rounds=None):
    from dpfed.fkm import FKMConfig, event_mechanism, run_dp_fkm, run_fkm

    config = FKMConfig(
        dim=int(args.dim),
        horizon=int(args.horizon),
        radius=args.radius,
        loss=args.loss,
        exploration=args.exploration,
        step=args.step,
    )
    common = dict(runs=int(args.runs), record_transcript=args.save_transcript, on_rounds=on_rounds)
    from reports.commands.run_sizes import check_fkm_sizes

    dataset = algorithm == "dp-fkm" and args.unit == "dataset"
    records = (200 if args.records is None else int(args.records)) if dataset else 0
    check_fkm_sizes(config, int(args.runs), bool(args.save_transcript), records)
    if algorithm == "fkm":
        return run_fkm(config, int(args.seed), **common)
    if args.unit == "event":
        for flag in ("records", "rate"):
            if getattr(args, flag) is not None:
                raise ConfigurationError(flag, "only the dataset level (--unit dataset) samples records")
        if args.claim_epsilon is not None and args.noise_multiplier is not None:
            raise ConfigurationError("claim_epsilon", "give --claim-epsilon or --noise-multiplier, not both")
        epsilon = 1.0 if args.claim_epsilon is None else args.claim_epsilon
        mech = event_mechanism(config, epsilon, args.delta, args.noise_multiplier)
        return run_dp_fkm(config, int(args.seed), mechanism=mech, **common)
    if args.unit != "dataset":
        raise ConfigurationError("unit", f"unknown {args.unit!r}; choose event or dataset")
    if args.claim_epsilon is not None:
        raise ConfigurationError("claim_epsilon", "the dataset level takes --noise-multiplier (T releases compose)")
    sigma = 1.0 if args.noise_multiplier is None else args.noise_multiplier
    records = 200 if args.records is None else int(args.records)
    rate = 0.1 if args.rate is None else args.rate
    return run_dp_fkm(
        config, int(args.seed), unit="dataset", records=records, rate=rate, noise_multiplier=sigma, **common
    )


def report_privacy(run, args) -> dict:
    mech = run.mechanism
    if args.unit == "event":
        print(
            f"\nprivacy (event level, ours: neighbouring loss sequences differ in one loss; losses clipped to "
            f"[-B, B], B = {format_number(run.parameters['B'])}): each fed-back loss gets Gaussian noise of std "
            f"{format_number(mech.noise_std)} (sigma = {format_number(mech.noise_multiplier)}); the whole run "
            "is ONE such release (no composition over rounds)"
        )
    else:
        print(
            f"\nprivacy (dataset level, ours: add/remove one record): {args.horizon} rounds of the subsampled "
            f"Gaussian (q = {mech.rate:g}, sigma = {format_number(mech.noise_multiplier)}, clip B)"
        )
    return privacy_section(run, args)


def run_command(algorithm: str, args) -> int:
    paths = claim_run_outputs(args, "fkm", algorithm, args.loss, args.unit if algorithm == "dp-fkm" else None)
    with progress_bar(args, int(args.horizon), algorithm, "round") as bar:  # the runs go in one loop
        run = execute(algorithm, args, bar.update)
    print(  # the exploration radius is FKM's "delta"; it is not the privacy delta, so it is not called that
        f"{run.algorithm}: n={run.config.dim}, T={run.config.horizon}, {run.config.loss} losses, "
        f"runs={args.runs} (seed {args.seed}); exploration radius={format_number(run.exploration)}, "
        f"eta={format_number(run.step)}"
    )
    mean, se = regret_summary(run.regret, "expected regret at the played points")
    print(
        f"corrected bound of notes C.3 (2 sqrt(6) sqrt(n B D G) T^(3/4) at the optimum): "
        f"{format_number(run.bound, 2)}; measured/bound = {mean[-1] / run.bound:.3f}"
    )
    print("communication: none (single learner); one scalar of feedback per round")
    payload = {
        "algorithm": algorithm,
        "summary": run.summary(),
        "regret_mean": mean.tolist(),
        "regret_se": se.tolist(),
        "regret_bound": run.bound,
    }
    if algorithm == "dp-fkm":
        payload["privacy"] = report_privacy(run, args)
    else:
        payload["privacy"] = None
        print("\nnot private: the observed losses are released exactly (epsilon = infinity)")
    write_outputs(args, run, paths, payload, mean, se, "expected regret")
    return 0
