"""``dpaudit run duets|dp-duets|diskernelucb``: distributed kernel bandits, regret, communication, privacy.

Prints the cumulative regret summed over agents (mean and standard error over runs), the communication
in reals (the seed's eq. 2: uplink averaged over agents plus downlink) and, for DP-DUETS (our private
variant, notes A.9), what the run released and the epsilon of that composition from every accountant.
Writes a JSON result and regret and communication plots to ``--out`` (atomically). Options may come from a
TOML file (``--config``: any ``DuetsConfig`` key, optionally under ``[duets]``, plus ``runs``, ``seed``,
``threshold``); flags given on the command line win. Unknown keys are errors.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from accounting.errors import ConfigurationError, require_number
from accounting.strict import INTEGER, NUMBER_OR_STRING, dataclass_schema, read_strict_toml
from attacks.files import atomic_write_bytes
from reports.commands.common import (
    add_accountants_argument,
    format_number,
    mean_and_standard_error,
    print_table,
    write_curve_png,
)
from reports.commands.run_files import add_force_argument, claim_outputs, stderr_cell, variant_stem
from reports.commands.run_progress import add_progress_argument, each_run, encode_result

ALGORITHM_HELP = {
    "duets": "DUETS (seed 001): uniform sampling with shared coins, sparse-GP elimination",
    "dp-duets": "DP-DUETS (ours): one subsampled-Gaussian release per completed epoch",
    "diskernelucb": "DisKernelUCB baseline (Li et al. 2022), log-det event trigger",
}
FLAGS = {  # flag -> (DuetsConfig field or run option, help)
    "objective": "branin (default) | hartmann4 | cosine | polynomial",
    "num_agents": "number of agents N (default 10)",
    "horizon": "queries per agent T (default 50)",
    "beta": "confidence width (default 1) or 'theory' (Lemma 2.5)",
    "elimination": "paper (eq. 9, default) | code | off",
}
DP_FLAGS = {
    "noise_multiplier": "noise std in units of the clip (default 1)",
    "unit": "agent (default) | reward",
    "rate": "Poisson sampling rate of agents (default 1)",
    "agent_clip": "public (c_y kappa T_j, default) | sqrt (clip_scale c_y kappa sqrt(T_j))",
    "reward_clip": "rewards are clipped to [-c_y, c_y] (default 4)",
    "dp_delta": "privacy delta at which epsilon is reported (default 1e-5; the config key dp_delta: a config's "
                "delta is the bandit's confidence level)",
}
RUN_OPTIONS = {"runs": 1, "seed": 0, "threshold": 10.0}
# a DuetsConfig field whose flag is spelled as in the other commands: --delta (dp-fed-pne, dp-fedzero, dp-fkm)
FLAG_NAMES = {"dp_delta": "delta"}
CHOICES = {"unit": ("agent", "reward")}  # the unit of privacy is a choice in every command
# DuetsConfig fields only dp-duets uses (``DuetsConfig``: "Privacy fields are used by dp-duets only")
DP_FIELDS = ("unit", "rate", "noise_multiplier", "reward_clip", "agent_clip", "clip_scale", "neighbouring",
             "noise_correction", "noise_delta", "dp_delta")


def add_algorithms(subparsers) -> None:
    for name, help_text in ALGORITHM_HELP.items():
        p = subparsers.add_parser(name, help=help_text)
        p.add_argument("--config", default=None, help="TOML file with DuetsConfig keys, runs, seed, threshold")
        flags = {**FLAGS, **(DP_FLAGS if name == "dp-duets" else {})}
        for key, text in flags.items():
            p.add_argument("--" + FLAG_NAMES.get(key, key).replace("_", "-"), dest=key, default=None, help=text,
                           choices=CHOICES.get(key))
        if name == "dp-duets":
            add_accountants_argument(p)
        if name == "diskernelucb":
            p.add_argument("--threshold", default=None, help="event-trigger threshold D (default 10; inf: none)")
        p.add_argument("--seed", default=None, help="base seed S (run r uses seed [S, r]; default 0)")
        p.add_argument("--runs", default=None, help="number of runs R (default 1)")
        p.add_argument("--out", default="dpaudit-out", metavar="DIR",
                       help="output directory: the JSON result and the plots")
        add_force_argument(p)
        p.add_argument("--save-transcript", action="store_true", help="include run 0's transcript in the JSON")
        add_progress_argument(p)
        p.set_defaults(func=functools.partial(run_command, name))


def _number_or_word(value):
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def config_schema(algorithm: str) -> dict:
    """The keys ``algorithm`` reads from a --config file, typed: DuetsConfig's fields (the privacy ones for
    dp-duets only, as its flags), ``runs``, ``seed`` and ``threshold`` (diskernelucb only: ``read_config``)."""
    from dpfed.duets import DuetsConfig

    exclude = () if algorithm == "dp-duets" else DP_FIELDS
    return {**dataclass_schema(DuetsConfig, exclude=exclude), "runs": INTEGER, "seed": INTEGER,
            "threshold": NUMBER_OR_STRING}


def read_config(algorithm: str, path) -> dict:
    """A --config file read strictly (``accounting.strict``): an unknown key (one ``algorithm`` would
    ignore included), a key beside a ``[duets]`` table or a wrong type is a ConfigurationError."""
    data = read_strict_toml(path, config_schema(algorithm), table="duets")
    if algorithm != "diskernelucb" and "threshold" in data:
        raise ConfigurationError("threshold", f"only diskernelucb has an event-trigger threshold, not {algorithm}")
    if isinstance(data.get("threshold"), str) and data["threshold"] != "inf":
        raise ConfigurationError("threshold", f'expected a number or "inf", got {data["threshold"]!r} (in {path})')
    return data


def resolve(algorithm: str, args):
    """(DuetsConfig, run options): command line over config file over defaults, validated."""
    from dpfed.duets import DuetsConfig
    from dpfed.duets.config import FIELD_NAMES

    data = dict(read_config(algorithm, args.config)) if args.config is not None else {}
    options = {key: data.pop(key, default) for key, default in RUN_OPTIONS.items()}
    for key in list(FLAGS) + list(DP_FLAGS):
        value = getattr(args, key, None)
        if value is not None:
            data[key] = _number_or_word(value) if key in ("beta",) else value
    for key in ("runs", "seed", "threshold"):
        if getattr(args, key, None) is not None:
            options[key] = getattr(args, key)
    if "algorithm" in data and data["algorithm"] != algorithm:
        raise ConfigurationError("algorithm", f"the config says {data['algorithm']!r}, the command {algorithm!r}")
    data["algorithm"] = "duets" if algorithm == "diskernelucb" else algorithm
    unknown = sorted(set(data) - FIELD_NAMES)
    if unknown:
        raise ConfigurationError(unknown[0], "unknown configuration key")
    try:
        config = DuetsConfig.from_dict(data)
    except ConfigurationError as exc:  # --delta sets the field dp_delta: the error names the flag as typed
        if exc.field != "dp_delta" or getattr(args, "dp_delta", None) is None:
            raise
        raise ConfigurationError("delta", str(exc).split(": ", 1)[-1]) from None
    options["runs"] = int(require_number("runs", options["runs"], low=1, integer=True))
    options["seed"] = int(require_number("seed", options["seed"], low=0, integer=True))
    threshold = options["threshold"]
    is_inf = str(threshold) == "inf" or threshold == math.inf  # the flag's word, or TOML's inf
    options["threshold"] = math.inf if is_inf else require_number("threshold", threshold, low=0)
    if algorithm == "diskernelucb" and isinstance(config.beta, str):
        raise ConfigurationError("beta", "diskernelucb needs a numeric beta")
    from reports.commands.run_sizes import check_duets_sizes

    check_duets_sizes(algorithm, config, options["runs"])
    return config, options


def execute(algorithm: str, config, options: dict, args=None) -> list:
    """The runs (seeds [S, r]), with a bar over them on stderr when ``args`` asks for progress."""
    from dpfed.duets import run_dis_kernel_ucb, run_duets

    seeds = [np.random.SeedSequence([options["seed"], r]) for r in range(options["runs"])]
    if algorithm == "diskernelucb":
        return each_run(args, algorithm, lambda s: run_dis_kernel_ucb(config, s, options["threshold"]), seeds)
    return each_run(args, algorithm, lambda s: run_duets(config, s), seeds)


def privacy_report(run, config, accountants) -> dict:
    """Print and return the privacy section of a DP-DUETS run."""
    from accounting.registry import account_all

    composition = run.composition()
    unit = "one agent's rewards (add/remove)" if config.unit == "agent" else "one reward (replace-one)"
    clips = ", ".join(format_number(m.clip, 3) for m, _ in composition.parts)
    print(
        f"\nprivacy (DP-DUETS, our design; unit: {unit}; rewards clipped to +-{config.reward_clip:g}): "
        f"{composition.total_count} subsampled-Gaussian release(s), z = {config.noise_multiplier:g}, "
        f"q = {config.rate:g}, clip(s) {clips}"
    )
    rows = [a.to_dict() for a in account_all(composition, config.dp_delta, accountants, insist=accountants or ())]
    print_table(
        ["accountant", f"epsilon at delta={config.dp_delta:g}", "status"],
        [
            [a["name"], format_number(a["epsilon"]), a["status"] + (f" ({a['reason']})" if a["reason"] else "")]
            for a in rows
        ],
    )
    return {
        "unit": unit,
        "releases": composition.total_count,
        "noise_multiplier": config.noise_multiplier,
        "rate": config.rate,
        "clips": [m.clip for m, _ in composition.parts],
        "delta": config.dp_delta,
        "accounting": rows,
    }


def run_command(algorithm: str, args) -> int:
    config, options = resolve(algorithm, args)
    stem = variant_stem("duets", algorithm, config.objective, config.unit if algorithm == "dp-duets" else None)
    paths = claim_outputs(args.out, [f"{stem}.json", f"{stem}_regret.png", f"{stem}_communication.png"], args.force)
    results = execute(algorithm, config, options, args)
    regret, regret_se = mean_and_standard_error(np.array([r.regret for r in results]))
    comm, comm_se = mean_and_standard_error(np.array([r.communication for r in results]))
    rounds = print_regret_and_communication(algorithm, config, options, results, regret, regret_se, comm, comm_se)
    payload = {
        "algorithm": algorithm,
        "config": config.to_dict(),
        "options": options,
        "final_regret_mean": float(regret[-1]),
        "final_regret_se": float(regret_se[-1]),
        "regret_mean": regret.tolist(),
        "regret_se": regret_se.tolist(),
        "communication_mean": comm.tolist(),
        "communication_se": comm_se.tolist(),
        "communication_rounds": rounds,
        "runs": [r.summary() for r in results],
        "privacy": None,
    }
    if algorithm == "dp-duets":
        accountants = args.accountants.split(",") if args.accountants is not None else None
        payload["privacy"] = privacy_report(results[0], config, accountants)
    else:
        print("\nnot private: the statistics are sent unnoised (epsilon = infinity)")
    if args.save_transcript:
        payload["transcript"] = results[0].transcript.to_dict()
    _write(paths, payload, regret, regret_se, comm, comm_se, algorithm, config.objective, args)
    return 0


def print_regret_and_communication(algorithm, config, options, results, regret, regret_se, comm, comm_se) -> list:
    """Print the heading and the table of cumulative regret and communication (means and standard errors
    over runs) at five steps, then the mean number of communication rounds; returns those per run."""
    horizon = config.horizon
    print(
        f"{algorithm} on {config.objective}: N={config.num_agents} agents, T={horizon}, runs={options['runs']} "
        f"(seed {options['seed']})"
    )
    steps = sorted(set(np.linspace(1, horizon, min(horizon, 5)).astype(int)))
    print_table(
        ["step", "cumulative regret (sum over agents)", "std error", "communication (reals)", "std error"],
        [
            [
                str(t),
                format_number(regret[t - 1], 2),
                stderr_cell(regret_se[t - 1], options["runs"]),
                format_number(comm[t - 1], 1),
                stderr_cell(comm_se[t - 1], options["runs"], 1),
            ]
            for t in steps
        ],
    )
    rounds = [
        r.communication_rounds if algorithm != "diskernelucb" else r.parameters["synchronisations"] for r in results
    ]
    print(f"communication rounds: {np.mean(rounds):.2f} (mean over runs)")
    return rounds


def _write(paths: list[Path], payload, regret, regret_se, comm, comm_se, algorithm, objective, args=None) -> None:
    """Write the JSON and the two plots to ``paths`` (from ``claim_outputs``), atomically."""
    out = paths[0].parent
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError("out", f"cannot create {out}: {exc.strerror}") from None
    x = np.arange(1, len(regret) + 1)
    json_path = atomic_write_bytes(paths[0], encode_result(args, paths[0], payload, len(regret) * len(payload["runs"])))
    title = f"{algorithm} on {objective}"
    regret_png = write_curve_png(paths[1], x, regret, regret_se, title, "step", "cumulative regret")
    comm_png = write_curve_png(paths[2], x, comm, comm_se, title, "step", "communication (reals)")
    print(f"\nwrote {json_path}, {regret_png} and {comm_png}")
