"""``dpaudit run fedzero|dp-fedzero``: federated zero-order optimisation and our private variant.

Prints the cumulative regret (mean, standard error, 95% quantile over runs) next to the bracket of
the seed's Theorem 4.1 (universal constant C = 1, so the ratio is the empirical C), the communication
(reals up and down), and for DP-FedZero the guarantee of one unit (n rounds of the subsampled
Gaussian) from every accountant. Writes a JSON result and a regret plot to ``--out``.
"""

from __future__ import annotations

import functools

import numpy as np

from reports.commands.common import POSITIVE, PROBABILITY, RATE, STEPS, add_old_spelling, format_number, number_arg
from reports.commands.run_output import (
    add_run_arguments,
    claim_run_outputs,
    privacy_section,
    regret_summary,
    write_outputs,
)
from reports.commands.run_progress import progress_bar

DEFAULT_EPSILON = 4.0  # the privacy level the default DP-FedZero run spends (see default_noise_multiplier)

ALGORITHM_HELP = {
    "fedzero": "FedZero: federated zero-order dual averaging with shared seeds (no privacy)",
    "dp-fedzero": "DP-FedZero (ours): clipped scalars with Gaussian noise, worker or record level",
}


def add_algorithms(subparsers) -> None:
    for name, help_text in ALGORITHM_HELP.items():
        p = subparsers.add_parser(name, help=help_text)
        p.add_argument("--geometry", default="l2", help="l2 (ball, Euclidean; default) | l1 (simplex, entropy)")
        p.add_argument("--dim", type=number_arg("dim", low=3, integer=True), default=10, help="d (default 10)")
        clients = number_arg("clients", **STEPS)
        p.add_argument("--clients", type=clients, default=4,
                       help="federated clients m, the algorithm's workers (not processes; default 4)")
        add_old_spelling(p, "--workers", "--clients", "clients", type=clients)  # --workers: processes elsewhere
        p.add_argument("--rounds", type=number_arg("rounds", **STEPS), default=10_000, help="n (default 1e4)")
        p.add_argument("--estimator", default="two-point", help="two-point (default) | one-point")
        p.add_argument("--randomisation", default="l1", help="l1 (sign of an l1-sphere direction; default) | l2")
        p.add_argument("--records", type=number_arg("records", **STEPS), default=20, help="records per worker")
        if name == "dp-fedzero":
            p.add_argument("--unit", choices=("worker", "record"), default="worker",
                           help="unit of privacy: worker (default: all its data) or record")
            p.add_argument("--noise", default="scalar", help="scalar (default) | vector (worker level)")
            p.add_argument("--rate", type=number_arg("rate", **RATE), default=1.0, help="sampling rate q")
            p.add_argument(
                "--noise-multiplier",
                dest="noise_multiplier",
                type=number_arg("noise_multiplier", **POSITIVE),
                default=None,
                help=f"sigma (default: calibrated so that the run spends epsilon {DEFAULT_EPSILON:g} at --delta "
                "with q = 1, exact Gaussian; a lower rate only lowers epsilon)",
            )
            p.add_argument("--clip", type=number_arg("clip", **POSITIVE), default=1.0, help="clip C of the scalar")
            p.add_argument("--delta", type=number_arg("delta", **PROBABILITY), default=1e-5, help="default 1e-5")
        add_run_arguments(p, private=name == "dp-fedzero")
        p.set_defaults(func=functools.partial(run_command, name))


def default_noise_multiplier(rounds: int, delta: float, epsilon: float = DEFAULT_EPSILON) -> float:
    """The default sigma of ``dpaudit run dp-fedzero``: with q = 1, n rounds of the scalar release compose to
    one Gaussian mechanism of noise multiplier ``sigma / sqrt(n)`` (for one unit, at every level and noise
    space), so ``sigma = sqrt(n) z(epsilon, delta)`` with the exact (analytic) Gaussian calibration gives
    exactly ``epsilon``; Poisson sampling at q < 1 only lowers it."""
    import math

    from accounting.calibration import analytic_gaussian_noise_multiplier

    return math.sqrt(rounds) * analytic_gaussian_noise_multiplier(epsilon, delta)


def execute(algorithm: str, args, on_rounds=None):
    from dpfed.fedzero import FedZeroConfig, run_dp_fedzero, run_fedzero
    from reports.commands.fedzero_sizes import check_fedzero_sizes

    sizes = {f: int(getattr(args, f)) for f in ("rounds", "runs", "records", "clients", "dim")}
    check_fedzero_sizes(sizes, bool(args.save_transcript), getattr(args, "unit", "worker") == "record")
    config = FedZeroConfig(
        dim=int(args.dim),
        workers=int(args.clients),
        rounds=int(args.rounds),
        geometry=args.geometry,
        estimator=args.estimator,
        randomisation=args.randomisation,
        records=int(args.records),
    )
    common = dict(runs=int(args.runs), record_transcript=args.save_transcript, on_rounds=on_rounds)
    if algorithm == "fedzero":
        return run_fedzero(config, int(args.seed), **common)
    if args.noise_multiplier is None:
        args.noise_multiplier = default_noise_multiplier(config.rounds, args.delta)
        print(
            f"noise multiplier not given: sigma = {args.noise_multiplier:.4g}, calibrated so that "
            f"{config.rounds} rounds at q = 1 spend epsilon {DEFAULT_EPSILON:g} at delta {args.delta:g} "
            "(exact Gaussian); a lower --rate only lowers epsilon"
        )
    return run_dp_fedzero(
        config,
        int(args.seed),
        unit=args.unit,
        noise=args.noise,
        rate=args.rate,
        noise_multiplier=args.noise_multiplier,
        clip=args.clip,
        **common,
    )


def report_privacy(run, args) -> dict:
    mech = run.mechanism
    who = "one worker (all its data)" if args.unit == "worker" else "one record of one worker"
    print(
        f"\nprivacy (ours; add/remove {who}): {run.config.rounds} rounds of the subsampled Gaussian "
        f"(q = {args.rate:g}, sigma = {format_number(mech.noise_multiplier)}, clip {format_number(mech.clip)}, "
        f"{args.noise} noise)"
    )
    return privacy_section(run, args, noise=args.noise)


def run_command(algorithm: str, args) -> int:
    from dpfed.fedzero import theorem_bound

    private = algorithm == "dp-fedzero"
    paths = claim_run_outputs(
        args, "fedzero", algorithm, args.geometry, f"{args.unit}-{args.noise}" if private else None
    )
    with progress_bar(args, int(args.rounds), algorithm, "round") as bar:  # the runs go in one loop
        run = execute(algorithm, args, bar.update)
    cfg = run.config
    print(
        f"{run.algorithm}: {cfg.geometry} geometry, d={cfg.dim}, m={cfg.workers}, n={cfg.rounds}, "
        f"{cfg.estimator} estimator, runs={args.runs} (seed {args.seed}); eta={format_number(run.step)}, "
        f"h={format_number(run.perturbation)}"
    )
    mean, se = regret_summary(run.regret, "cumulative regret")
    bracket = theorem_bound(cfg)
    q95 = float(np.quantile(run.final_regret, 0.95))
    print(
        f"Theorem 4.1 bracket (C = 1, conf_delta = {cfg.conf_delta:g}): {format_number(bracket, 2)}; "
        f"95% quantile of the final regret / bracket = {q95 / bracket:.4f} (the empirical C)"
        + (
            "; the bound is the non-private one (the noise adds to the second moment, notes B.5)"
            if algorithm == "dp-fedzero"
            else ""
        )
    )
    print(
        f"communication: {run.uplink_reals} reals uplink ({cfg.workers} workers x 1 per round, shared seed), "
        f"{run.downlink_reals} reals downlink"
    )
    payload = {
        "algorithm": algorithm,
        "summary": run.summary(),
        "regret_mean": mean.tolist(),
        "regret_se": se.tolist(),
        "theorem_4_1_bracket": bracket,
        "final_regret_q95": q95,
    }
    if algorithm == "dp-fedzero":
        payload["privacy"] = report_privacy(run, args)
    else:
        from attacks.probes.fedzero import PRIVACY_REMARK

        payload["privacy"] = None
        print(f"\nnot private (epsilon = infinity). {PRIVACY_REMARK}")
    write_outputs(args, run, paths, payload, mean, se, "cumulative regret")
    return 0
