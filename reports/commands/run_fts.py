"""``dpaudit run fts|fts-de|dp-fts|dp-fts-de|ts``: federated Thompson sampling, utility and privacy.

Prints the mean utility over rounds (with standard errors over runs), the epsilon of the configuration
from every accountant (``accounting.account_all(run.composition(), delta)``), and writes a JSON result
and a utility plot to ``--out`` (both written atomically).
"""

from __future__ import annotations

import functools

import numpy as np

from accounting.errors import ConfigurationError, require_number
from attacks.files import atomic_write_bytes
from reports.commands.common import (
    add_accountants_argument,
    format_number,
    mean_and_standard_error,
    number_arg,
    print_table,
    write_curve_png,
)
from reports.commands.run_files import add_force_argument, claim_outputs, stderr_cell
from reports.commands.run_progress import add_progress_argument, encode_result, progress_bar
from reports.commands.run_sizes import refuse_unless_fits

ALGORITHM_HELP = {
    "fts": "federated TS through a server, P = 1, no privacy",
    "fts-de": "federated TS with distributed exploration, no privacy",
    "dp-fts": "differentially private FTS (P = 1)",
    "dp-fts-de": "differentially private FTS with distributed exploration",
    "ts": "plain local Thompson sampling (no federation)",
}


# FTSConfig keys only the private server reads (its subsampled Gaussian and its empty-sample fallback): a
# --config file giving one to a non-private run is refused, as ``run fed-pne`` refuses its privacy keys
PRIVATE_ONLY = ("rate", "noise_multiplier", "clip", "delta", "sampling", "neighbouring", "empty_sample_fallback")


def add_algorithms(subparsers) -> None:
    for name, help_text in ALGORITHM_HELP.items():
        p = subparsers.add_parser(name, help=help_text)
        source = p.add_mutually_exclusive_group()
        source.add_argument(
            "--preset", default=None, help="landmine | svm-breast-cancer (default) | svm-digits | synthetic"
        )
        source.add_argument("--config", default=None, help="TOML file of FTSConfig keys")
        p.add_argument(
            "--seed", type=number_arg("seed", low=0, integer=True), default=0, help="base seed (run r uses seed [S, r])"
        )
        p.add_argument("--runs", default="1", help="number of runs (seeds [S, 0..R-1])")
        p.add_argument("--out", default="dpaudit-out", metavar="DIR",
                       help="output directory: the JSON result and the plot")
        add_force_argument(p)
        p.add_argument("--landmine-path", default=None, help="path of LandmineData.mat")
        p.add_argument("--rounds", default=None, help="override the number of rounds T")
        if name.startswith("dp-"):  # non-private runs release nothing to account for
            add_accountants_argument(p)
        p.add_argument("--save-transcript", action="store_true", help="include run 0's transcript in the JSON")
        add_progress_argument(p)
        p.set_defaults(func=functools.partial(run_command, name))


def load_config(algorithm: str, args):
    from dpfed.fts import FTSConfig

    overrides = {
        "algorithm": algorithm,
        "landmine_path": args.landmine_path,
        "rounds": require_number("rounds", args.rounds, low=1, integer=True) if args.rounds is not None else None,
    }
    if args.config is not None:  # an empty --config "" is an error, never ignored
        keys = FTSConfig.toml_keys(args.config)
        stated = keys.get("algorithm", algorithm)
        ignored = [key for key in PRIVATE_ONLY if key in keys] if not algorithm.startswith("dp-") else []
        if ignored and stated == algorithm:
            raise ConfigurationError(
                ignored[0],
                f"{algorithm} releases nothing private and would ignore it (in the config file {args.config}); "
                "remove it, or run a dp- algorithm",
            )
        if stated != algorithm:
            raise ConfigurationError(
                "algorithm",
                f"{args.config} says {stated!r} but this command runs {algorithm!r}; "
                f"use `dpaudit run {stated}` or remove the key",
            )
        return FTSConfig.from_toml(args.config, **overrides)
    return FTSConfig.from_preset("svm-breast-cancer" if args.preset is None else args.preset, **overrides)


def check_fts_memory(config, runs: int) -> None:
    """Refuse sizes that cannot fit: each agent-round keeps its uploads (P vectors of M features) in the
    transcript; the acquisition scores all candidates against the features of every agent at once."""
    features = config.num_features + config.local_num_features
    per_agent_round = 16.0 * features * config.effective_subregions + 512
    fixed = 32.0 * config.candidates * features * config.num_agents * config.dim

    def need(rounds, runs):  # the field to shrink is named with the largest value that fits (issue 21)
        return fixed + float(rounds) * float(runs) * config.num_agents * per_agent_round

    refuse_unless_fits(
        {"rounds": config.rounds, "runs": runs},
        need,
        {
            "rounds": f" rounds ({config.num_agents} agents, M={config.num_features}, {runs} run(s))",
            "runs": f" runs ({config.rounds} rounds, {config.num_agents} agents, M={config.num_features})",
        },
    )


def run_command(algorithm: str, args) -> int:
    from dpfed.fts import run_fts
    from dpfed.objectives import make_objective

    runs = int(require_number("runs", args.runs, low=1, integer=True))
    config = load_config(algorithm, args)
    check_fts_memory(config, runs)
    stem = f"fts_{algorithm}_{config.objective}"
    json_out, png_out = claim_outputs(args.out, [f"{stem}.json", f"{stem}.png"], args.force)
    out = json_out.parent
    objective = None if config.objective == "synthetic" else make_objective(config, 0)  # shared fit cache
    with progress_bar(args, runs * config.rounds, algorithm, "round") as bar:
        results = [
            run_fts(config, np.random.default_rng([args.seed, r]), objective=objective, on_round=bar.update)
            for r in range(runs)
        ]
    curves = np.array([r.utility for r in results])
    mean, se = mean_and_standard_error(curves)
    name = results[0].utility_name
    print_utility(algorithm, config, runs, name, mean, se)
    # only the dp- commands have --accountants, and only their runs have a composition
    accounting_rows = privacy_report(results[0].composition(), config, getattr(args, "accountants", None))
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "algorithm": algorithm,
        "config": config.to_dict(),
        "seed": args.seed,
        "runs": runs,
        "utility_name": name,
        "utility_mean": mean.tolist(),
        "utility_se": se.tolist(),
        "utility_runs": curves.tolist(),
        "releases": [r.releases for r in results],
        "accounting": accounting_rows,
    }
    if args.save_transcript:
        payload["transcript"] = results[0].transcript.to_dict()
    json_path = atomic_write_bytes(json_out, encode_result(args, json_out, payload, curves.size))
    png_path = write_curve_png(
        png_out, np.arange(len(mean)), mean, se, f"{algorithm} on {config.objective}", "iteration", name
    )
    print(f"\nwrote {json_path} and {png_path}")
    return 0


def print_utility(algorithm: str, config, runs: int, name: str, mean: np.ndarray, se: np.ndarray) -> None:
    """Print the heading and the mean utility ``name`` with standard errors at up to seven rounds."""
    print(
        f"{algorithm} on {config.objective}: N={config.num_agents} T={config.rounds} M={config.num_features} "
        f"P={config.effective_subregions} runs={runs} ({name}, lower is better; agents' mean)"
    )
    steps = sorted(set(np.linspace(0, config.rounds, min(config.rounds, 6) + 1).astype(int)))
    print_table(
        ["round", name, "std error"], [[str(t), format_number(mean[t]), stderr_cell(se[t], runs, 4)] for t in steps]
    )


def privacy_report(composition, config, accountants) -> list[dict]:
    """Print what a run released (a composition of subsampled Gaussians, or None: nothing) and every
    accountant's epsilon at the configuration's delta; returns the accounting rows (none when not private)."""
    from accounting.registry import account_all

    if composition is None:
        print("\nnot private: no differentially private release (epsilon = infinity)")
        return []
    delta = config.dp_delta
    rows = [a.to_dict() for a in account_all(composition, delta, accountants, insist=accountants or ())]
    m = composition.parts[0][0]
    print(
        f"\nprivacy: {composition.total_count} releases of subsampled Gaussian "
        f"q={m.rate} z={m.noise_multiplier} "
        f"clip={format_number(m.clip)} ({m.sampling.value}, {m.neighbouring.value}), delta={delta:.4g}"
    )
    print_table(
        ["accountant", "epsilon", "status"],
        [
            [a["name"], format_number(a["epsilon"]), a["status"] + (f" ({a['reason']})" if a["reason"] else "")]
            for a in rows
        ],
    )
    return rows
