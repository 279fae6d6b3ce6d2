"""``dpaudit run fed-pne|dp-fed-pne|hct``: federated X-armed bandits, regret and privacy.

Prints the average per-client cumulative regret (mean and standard error over runs), the number of
communication rounds and, for DP-Fed-PNE, the event-level privacy guarantee from every accountant
(with the classic calibration, a check against the exact Gaussian profile and the true delta). Writes
a JSON result and a regret plot to ``--out`` (both atomically). Options may come from a TOML file
(``--config``, e.g. ``configs/pne_garland.toml``); flags given on the command line win.
"""

from __future__ import annotations

import functools

import numpy as np

from accounting.errors import ConfigurationError, require_number
from accounting.strict import BOOLEAN, INTEGER, NUMBER, STRING, read_strict_toml
from attacks.files import atomic_write_bytes
from reports.commands.common import (
    add_accountants_argument,
    add_old_spelling,
    available_memory,
    format_number,
    mean_and_standard_error,
    print_table,
    write_curve_png,
)
from reports.commands.run_files import add_force_argument, claim_outputs, stderr_cell, variant_stem
from reports.commands.run_progress import add_progress_argument, each_run, encode_result
from reports.commands.run_sizes import refuse_unless_fits
from reports.exit_codes import ExitCode

ALGORITHM_HELP = {
    "fed-pne": "federated phased node elimination (no privacy)",
    "dp-fed-pne": "Fed-PNE with clipped, Gaussian-noised rewards (event-level DP)",
    "hct": "centralised HCT on the global objective (the baseline)",
}
DEFAULTS = {
    "objective": "garland",
    "clients": 10,
    "horizon": 1000,
    "seed": 0,
    "runs": 1,
    "out": "dpaudit-out",
    "epsilon": 1.0,
    "delta": 1e-5,
    "calibration": "analytic",
    "heterogeneity": 0.1,
    "noise_width": 0.2,
}
CONSTANTS = ("k", "nu1", "rho", "c", "c1", "conf_delta", "expansion", "final_upload")
# Keys a --config file may hold, with their types; each algorithm reads only the ones it uses.
KEY_KINDS = {
    "objective": STRING,
    "clients": INTEGER,
    "horizon": INTEGER,
    "seed": INTEGER,
    "runs": INTEGER,
    "out": STRING,
    "epsilon": NUMBER,
    "delta": NUMBER,
    "calibration": STRING,
    "heterogeneity": NUMBER,
    "noise_width": NUMBER,
    "k": INTEGER,
    "nu1": NUMBER,
    "rho": NUMBER,
    "c": NUMBER,
    "c1": NUMBER,
    "conf_delta": NUMBER,
    "expansion": STRING,
    "final_upload": BOOLEAN,
}
PRIVATE_ONLY = ("epsilon", "delta", "calibration")
FEDERATED_ONLY = ("clients", "heterogeneity", "expansion", "final_upload")


def config_schema(algorithm: str) -> dict:
    """The keys ``algorithm`` reads from a --config file (a key it would ignore is an error)."""
    unused = set()
    if algorithm != "dp-fed-pne":
        unused.update(PRIVATE_ONLY)
    if algorithm == "hct":
        unused.update(FEDERATED_ONLY)
    return {key: kind for key, kind in KEY_KINDS.items() if key not in unused}


def add_algorithms(subparsers) -> None:
    for name, help_text in ALGORITHM_HELP.items():
        p = subparsers.add_parser(name, help=help_text)
        p.add_argument("--config", default=None, help="TOML file with any of these options and PNE constants")
        p.add_argument("--objective", default=None, help="garland (default) | doublesine | himmelblau")
        if name != "hct":
            p.add_argument("--clients", default=None, help="number of clients M (default 10)")
        p.add_argument("--horizon", default=None, help="pulls per client T (default 1000)")
        if name == "dp-fed-pne":
            p.add_argument("--claim-epsilon", dest="epsilon", default=None,
                           help="event-level epsilon to claim; the noise is calibrated to it (default 1; the config "
                           "key epsilon)")
            add_old_spelling(p, "--epsilon", "--claim-epsilon", "epsilon")
            p.add_argument("--delta", default=None, help="privacy delta (default 1e-5)")
            p.add_argument("--calibration", default=None, help="analytic (default, exact) | classic")
            add_accountants_argument(p)
        if name != "hct":
            p.add_argument("--heterogeneity", default=None, help="size of the local perturbations (default 0.1)")
        p.add_argument(
            "--noise-width",
            dest="noise_width",
            default=None,
            help="width of the uniform observation noise (default 0.2)",
        )
        p.add_argument("--seed", default=None, help="base seed S (run r uses seed [S, r]; default 0)")
        p.add_argument("--runs", default=None, help="number of runs R (default 1)")
        p.add_argument("--out", default=None, metavar="DIR", help="output directory: the JSON result and the plot")
        add_force_argument(p)
        if name != "hct":  # HCT is centralised: nothing crosses a network
            p.add_argument("--save-transcript", action="store_true", help="include run 0's transcript in the JSON")
        add_progress_argument(p)
        p.set_defaults(func=functools.partial(run_command, name))


def resolve_options(algorithm: str, args) -> tuple[dict, dict]:
    """Options (command line over config file over defaults), validated; and the PNE constants."""
    config = read_strict_toml(args.config, config_schema(algorithm)) if args.config is not None else {}
    opts = {key: getattr(args, key, None) for key in DEFAULTS}
    opts = {key: (value if value is not None else config.get(key, DEFAULTS[key])) for key, value in opts.items()}
    opts["clients"] = 1 if algorithm == "hct" else int(require_number("clients", opts["clients"], low=1, integer=True))
    opts["horizon"] = int(require_number("horizon", opts["horizon"], low=1, integer=True))
    opts["runs"] = int(require_number("runs", opts["runs"], low=1, integer=True))
    opts["seed"] = int(require_number("seed", opts["seed"], low=0, integer=True))
    opts["heterogeneity"] = require_number("heterogeneity", opts["heterogeneity"], low=0)
    opts["noise_width"] = require_number("noise_width", opts["noise_width"], low=0)
    opts["epsilon"] = require_number("epsilon", opts["epsilon"], low=0, low_open=True)
    opts["delta"] = require_number("delta", opts["delta"], low=0, high=1, low_open=True, high_open=True)
    if opts["calibration"] not in ("analytic", "classic"):
        raise ConfigurationError("calibration", f"unknown method {opts['calibration']!r}; choose analytic or classic")
    from dpfed.pne import get_objective

    get_objective(opts["objective"])  # validates the name
    refuse_unless_fits(  # the field to shrink is named with the largest value that fits (issue 21)
        {"horizon": opts["horizon"], "runs": opts["runs"], "clients": opts["clients"]},
        pne_bytes,
        {
            "horizon": f" pulls ({opts['clients']} client(s), {opts['runs']} run(s))",
            "runs": f" runs ({opts['horizon']} pulls, {opts['clients']} client(s))",
            "clients": f" clients ({opts['horizon']} pulls, {opts['runs']} run(s))",
        },
        usual={"horizon": 1000, "runs": 1, "clients": 10},
    )
    constants = {key: config[key] for key in CONSTANTS if key in config}
    if algorithm != "hct":  # HCT expands one node at a time
        check_first_phase(opts, constants)
    return opts, constants


RESULT_BYTES_PER_PULL = 200.0


def pne_bytes(horizon, runs, clients) -> float:
    """Estimated peak bytes of a run command. Measured (tracemalloc): about 40-80 bytes per pull and 10 per
    client-pull while running, each finished run keeps its curves (about 48 bytes per pull), and writing the
    result (the mean and standard-error curves as Python floats, their JSON text and its bytes) adds about
    150 bytes per pull on top: 293 bytes per pull in all at one client and one run (it was left out, so
    a horizon "that fits" could need twice the memory available)."""
    return float(horizon) * (80 + 16.0 * clients + 48.0 * runs + RESULT_BYTES_PER_PULL)


NODE_BYTES = 200  # measured peak: about 140-170 bytes per node of the first phase (k = 1000 and 3000)


def check_first_phase(opts: dict, constants: dict) -> None:
    """Refuse constants whose first phase cannot fit: it expands the root to k^depth nodes before any
    pull (``PNEConfig.first_phase_nodes``; k = 10^6 asked for a 7 TiB array), naming the largest k that fits."""
    from dpfed.pne.algorithm import PNEConfig

    def need(k):
        settings = {**constants, "k": max(2, int(k))}
        return NODE_BYTES * float(PNEConfig(opts["horizon"], opts["clients"], **settings).first_phase_nodes())

    if need(2) > available_memory():
        raise ConfigurationError("nu1", f"these constants (nu1, rho, c, c1, conf_delta) ask for at most one sample "
                                 f"per node down to a depth where even k = 2 gives {need(2) / NODE_BYTES:.3g} nodes in "
                                 "the first phase, more than memory holds; raise c or lower nu1")
    what = " children per node: the first phase expands the root to k^depth nodes before any pull"
    refuse_unless_fits({"k": constants.get("k", 2)}, need, {"k": what})


def execute(algorithm: str, opts: dict, constants: dict, args=None) -> list:
    """The runs (seeds [S, r]), with a bar over them on stderr when ``args`` asks for progress."""
    seeds = [np.random.SeedSequence([opts["seed"], r]) for r in range(opts["runs"])]
    return each_run(args, algorithm, run_one(algorithm, opts, constants), seeds)


def run_one(algorithm: str, opts: dict, constants: dict):
    """A function of the seed that runs ``algorithm`` once."""
    from dpfed.pne import ObservationNoise, run_dp_fed_pne, run_fed_pne, run_hct

    common = dict(noise=ObservationNoise("uniform", opts["noise_width"]))
    if algorithm == "hct":
        hct_keys = {k: v for k, v in constants.items() if k in ("k", "nu1", "rho", "c", "c1", "conf_delta")}
        return lambda s: run_hct(opts["objective"], opts["horizon"], seed=s, **common, **hct_keys)
    common.update(heterogeneity=opts["heterogeneity"], **constants)
    if algorithm == "fed-pne":
        return lambda s: run_fed_pne(opts["objective"], opts["clients"], opts["horizon"], seed=s, **common)
    c = common.pop("c", 0.1)
    return lambda s: run_dp_fed_pne(
        opts["objective"],
        opts["clients"],
        opts["horizon"],
        epsilon=opts["epsilon"],
        dp_delta=opts["delta"],
        calibration=opts["calibration"],
        c=c,
        seed=s,
        **common,
    )


def privacy_report(run, opts: dict) -> dict:
    """Print and return the privacy section of a DP-Fed-PNE run."""
    from accounting.calibration import check_classic_calibration, classic_failure_threshold
    from accounting.registry import account_all

    eps, delta, method = opts["epsilon"], opts["delta"], opts["calibration"]
    mech = run.mechanism
    print(
        f"\nprivacy (event level: neighbouring runs differ in one reward of one client; rewards clipped "
        f"to [0, 1]): each reward gets Gaussian noise of std {format_number(mech.noise_std)} ({method} "
        f"calibration for epsilon={eps:g}, delta={delta:g}); the whole run is one such release"
    )
    named = opts.get("accountants")
    rows = [a.to_dict() for a in account_all(run.composition(), delta, named, insist=named or ())]
    print_table(
        ["accountant", f"epsilon at delta={delta:g}", "status"],
        [
            [a["name"], format_number(a["epsilon"]), a["status"] + (f" ({a['reason']})" if a["reason"] else "")]
            for a in rows
        ],
    )
    section = {
        "unit": "one reward of one client (event level)",
        "epsilon": eps,
        "delta": delta,
        "calibration": method,
        "noise_std": mech.noise_std,
        "accounting": rows,
    }
    if method == "classic":
        check = check_classic_calibration(eps, delta)
        threshold = classic_failure_threshold(delta)
        where = f"from about epsilon = {threshold:.2f}" if threshold else "nowhere below epsilon = 100"
        print(
            f"\nWARNING: the classic calibration sigma = sqrt(2 ln(1.25/delta))/epsilon is proven only "
            f"for epsilon < 1 and does not give the claimed guarantee for large epsilon: for "
            f"delta={delta:g} it fails {where}."
        )
        verdict = "VIOLATED: the claimed guarantee does NOT hold" if check.violated else "the claim holds here"
        print(
            f"true delta at epsilon={eps:g}: {check.true_delta:.4g} (claimed {delta:g}): {verdict}; the "
            f"analytic calibration needs noise std {format_number(check.analytic_noise_multiplier)}"
        )
        section["classic_check"] = {**check.to_dict(), "failure_threshold_epsilon": threshold}
    return section


def run_command(algorithm: str, args) -> int:
    opts, constants = resolve_options(algorithm, args)
    stem = variant_stem("pne", algorithm, opts["objective"], opts["calibration"] if algorithm == "dp-fed-pne" else None)
    paths = claim_outputs(opts["out"], [f"{stem}.json", f"{stem}.png"], args.force)
    results = execute(algorithm, opts, constants, args)
    mean, se = mean_and_standard_error(np.array([r.regret for r in results]))
    label = print_regret(algorithm, opts, results, mean, se)
    payload = {
        "algorithm": algorithm,
        "options": opts,
        "constants": constants,
        "final_regret_mean": float(mean[-1]),
        "final_regret_se": float(se[-1]),
        "regret_mean": mean.tolist(),
        "regret_se": se.tolist(),
        "communication_rounds": [r.communication_rounds for r in results],
        "runs": [r.summary() for r in results],
    }
    if algorithm == "dp-fed-pne":
        payload["privacy"] = privacy_report(results[0], {**opts, "accountants": args.accountants})
    else:
        payload["privacy"] = None
        print("\nnot private: no differentially private release (epsilon = infinity)")
    if getattr(args, "save_transcript", False):
        payload["transcript"] = results[0].transcript.to_dict()
    write_result(paths, algorithm, opts, payload, mean, se, label, args)
    classic = (payload["privacy"] or {}).get("classic_check") or {}
    return int(ExitCode.VIOLATION if classic.get("violated") else ExitCode.PASS)


def print_regret(algorithm: str, opts: dict, results: list, mean: np.ndarray, se: np.ndarray) -> str:
    """Print the run's heading, the regret table and (federated algorithms) the communication; returns the
    regret label."""
    runs, horizon = opts["runs"], opts["horizon"]
    who = "centralised, one evaluation per round" if algorithm == "hct" else f"M={opts['clients']} clients"
    print(f"{algorithm} on {opts['objective']}: {who}, T={horizon}, runs={runs} (seed {opts['seed']})")
    steps = sorted(set(np.linspace(1, horizon, min(horizon, 5)).astype(int)))
    label = "cumulative regret" if algorithm == "hct" else "avg per-client cumulative regret"
    print_table(
        ["round", label, "std error"],
        [[str(t), format_number(mean[t - 1], 2), stderr_cell(se[t - 1], runs)] for t in steps],
    )
    if algorithm != "hct":
        print(
            f"communication rounds: {np.mean([r.communication_rounds for r in results]):.2f} (mean over runs); "
            f"floats uploaded per client: {np.mean([r.uplink_floats for r in results]) / opts['clients']:.1f}"
        )
    return label


def write_result(paths, algorithm: str, opts: dict, payload: dict, mean, se, label: str, args=None) -> None:
    """Write the JSON result and the regret plot to ``paths`` (atomically) and say where."""
    paths[0].parent.mkdir(parents=True, exist_ok=True)
    json_path = atomic_write_bytes(paths[0], encode_result(args, paths[0], payload, len(mean) * opts["runs"]))
    png_path = write_curve_png(
        paths[1],
        np.arange(1, len(mean) + 1),
        mean,
        se,
        f"{algorithm} on {opts['objective']}",
        "round (pulls per client)",
        label,
    )
    print(f"\nwrote {json_path} and {png_path}")
