"""``dpaudit attack PROBE ...``: run a membership-inference probe, print each estimator's lower bound
and the empirical verdict against the claim, in the words of the audit's empirical verdict: VIOLATION (a
rigorous lower bound exceeds the claim), PASS (no evidence against it, and the trials could have
found some), INCONCLUSIVE (the trials cannot certify the claimed epsilon). Exit codes: 0 PASS (or no
claim), 1 VIOLATION, 2 bad input (nothing run), 3 INCONCLUSIVE or the probe failed (a worker died), 130
interrupted."""

from __future__ import annotations

import sys
import tomllib

from accounting.errors import ConfigurationError
from accounting.strict import ANY_TABLE, INTEGER, NUMBER, STRING, STRINGS, OneOf, read_strict_toml
from accounting.vocabulary import bound_kind
from reports.commands.common import probe_title
from reports.commands.run_progress import add_progress_argument

# What an attack --config file may hold (top level, or all under one [attack] table), with types;
# ``params`` is checked against the chosen probe's parameters once the probe is known.
CONFIG_SCHEMA = {
    "probe": STRING,
    "trials": NUMBER,
    "seed": INTEGER,
    "delta": NUMBER,
    "claim_epsilon": NUMBER,
    "claim_delta": NUMBER,
    "confidence": NUMBER,
    "executor": STRING,
    "workers": INTEGER,
    "scheduler": STRING,
    "checkpoint": STRING,
    "methods": OneOf((STRING, STRINGS)),
    "batch_size": NUMBER,  # a whole number, as for trials (1e8 allowed)
    "params": ANY_TABLE,
    "mechanism": STRING,
    "datasets": STRING,
    "classifier": STRING,
    "timeout": NUMBER,
    "reduction": STRING,
    "backend": STRING,
    "device": STRING,
}
CONFIG_KEYS = tuple(CONFIG_SCHEMA)
EXIT_PROBE_FAILED = 3  # reports/exit_codes.py: "INCONCLUSIVE, or a probe failed"
# executor and workers as audit's: auto (worker processes for a probe estimated over 10 s), the usable CPUs
DEFAULTS = {"trials": 100_000, "confidence": 0.95, "executor": "auto", "workers": None}


def parse_value(text: str):
    """A TOML scalar if ``text`` is one (numbers, booleans, quoted strings), else the raw string."""
    if text.lower() in ("none", "null"):
        return None
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):  # not a TOML value (or nested too deeply to be one)
        return text


def parse_params(items) -> dict:
    params = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigurationError("param", f"expected KEY=VALUE, got {item!r}")
        name = key.strip().replace("-", "_")
        if name in params:  # the first value was silently replaced
            raise ConfigurationError("param", f"{name} given more than once")
        params[name] = parse_value(value.strip())
    return params


def load_config(path) -> dict:
    if path is None:
        return {}
    return read_strict_toml(path, CONFIG_SCHEMA, table="attack")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "attack", help="run a membership-inference probe: epsilon lower bounds", description=__doc__
    )
    _add_probe_arguments(parser)
    _add_claim_arguments(parser)
    _add_execution_arguments(parser)
    parser.add_argument("--methods", help="comma-separated estimators (default: all score-based ones)")
    parser.add_argument("--format", choices=["table", "json"], default="table", help="output format; default table")
    add_progress_argument(parser)
    parser.set_defaults(func=run)


def _add_probe_arguments(parser) -> None:
    """What to probe: the probe or a user mechanism, its parameters and inputs."""
    parser.add_argument("probe", nargs="?", help="probe name (see --list); 'user' with --mechanism")
    parser.add_argument("--list", action="store_true", help="list the probes and exit (a one-run probe says so; one "
                        "that another command runs names it); with a PROBE, list its --param keys: name, value, "
                        "default, meaning (all probes' are on the docs' Probes and estimators page)")
    parser.add_argument("--config", help="TOML file with any of: " + ", ".join(CONFIG_KEYS))
    parser.add_argument("--param", action="append", metavar="KEY=VALUE",
                        help="probe parameter (repeatable; the keys of a probe: PROBE --list)")
    parser.add_argument("--mechanism", help="user mechanism 'module:function' called as f(dataset, rng)")
    parser.add_argument(
        "--allow-code",
        action="store_true",
        help="let a --config file name Python code to import (its 'mechanism' or "
        "params.function); a config is code then, so only with files you trust",
    )
    parser.add_argument(
        "--timeout", type=float, help="seconds per batch of a user mechanism (run in a worker process; default: none)"
    )
    parser.add_argument("--datasets", help="TOML file with the neighbouring datasets 'without' and 'with'")
    parser.add_argument("--classifier", choices=["logistic", "boosting"], help="learned score (user probe)")


def _add_claim_arguments(parser) -> None:
    """The claim to test and the statistics of the bounds."""
    parser.add_argument(
        "--claim-epsilon",
        type=float,
        help="claimed epsilon (default: the probe's tight epsilon of the described mechanism)",
    )
    parser.add_argument("--claim-delta", type=float, help="claimed delta (default: --delta)")
    parser.add_argument("--delta", type=float, help="delta of the bounds (default: the probe's)")
    parser.add_argument("--confidence", type=float, help="confidence level in (0, 1) (default 0.95)")
    parser.add_argument("--trials", help="trials per world, e.g. 100000 or 1e7 (default 100000)")


def _add_execution_arguments(parser) -> None:
    """How to run the trials: executor, seed, checkpoints, batches and array backend."""
    parser.add_argument("--executor", choices=["auto", "inprocess", "processes", "dask"],
                        help="where probe batches run (default auto: worker processes for probes estimated over "
                        "10 s, in this process otherwise; every executor gives the same numbers)")
    parser.add_argument("--workers", type=int, help="worker processes, or local Dask workers (default: the CPUs this "
                        "process may use)")
    parser.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786")
    parser.add_argument("--seed", type=int, help="seed (the same seed gives the same scores everywhere)")
    parser.add_argument(
        "--checkpoint",
        help="directory for finished batches; rerun to resume (refused if it was written by other inputs or code)",
    )
    parser.add_argument("--fresh", action="store_true", help="discard the checkpoint's batches and start afresh")
    parser.add_argument(
        "--batch-size",
        help="trials per batch, e.g. 1000000 or 1e8 (default: the probe's, capped by free memory)",
    )
    parser.add_argument(
        "--reduction",
        choices=["auto", "sorted", "counts"],
        help="keep every score (sorted) or counts over pilot-fixed thresholds (constant "
        "memory); auto: sorted up to 1e6 trials per world",
    )
    parser.add_argument("--backend", choices=["numpy", "torch"], help="array backend of the probe (default numpy)")
    parser.add_argument("--device", help="torch device: cpu or cuda (default cpu)")


def _settings(args) -> dict:
    from attacks.probes.user import require_code_opt_in

    config = load_config(args.config)
    params = config.get("params", {})
    require_code_opt_in("mechanism", config.get("mechanism"), args.allow_code)
    require_code_opt_in("params.function", params.get("function"), args.allow_code)
    require_code_opt_in("params.setup", params.get("setup"), args.allow_code)  # a DP-SGD set-up (dpsgd probes)
    settings = {**DEFAULTS, **{k: v for k, v in config.items() if k != "params"}}
    given = {k for k in config if k != "params"}
    for key in (k for k in CONFIG_KEYS if k != "params"):
        value = getattr(args, key)
        if value is not None:
            settings[key] = value
            given.add(key)
    settings["given"] = frozenset(given)  # what the config or the command line set (not a default)
    if args.fresh and settings.get("checkpoint") is None:
        raise ConfigurationError("fresh", "discards a checkpoint's batches: it goes with --checkpoint DIR")
    settings["params"] = {**params, **parse_params(args.param)}
    if settings.get("batch_size") is not None:  # the number forms --trials takes (1e8, 100_000)
        from attacks.run_plan import check_whole_number

        settings["batch_size"] = check_whole_number(settings["batch_size"], "batch_size")
    return settings


def auto_executor(probe, trials: int, settings: dict) -> tuple[str, int]:
    """``--executor auto`` as the audit decides it (``reports.audit.probes.choose_executor``): worker processes
    (``--workers``, default the usable CPUs) when timed small batches estimate over 10 s, else this process."""
    from types import SimpleNamespace

    from reports.audit.probes import choose_executor, estimate_seconds

    if settings.get("scheduler") is not None:
        raise ConfigurationError("scheduler", "goes with --executor dask, not auto")
    batch_size = settings.get("batch_size")
    seconds = estimate_seconds(probe, trials, settings.get("seed") or 0, batch_size)
    workers = settings["workers"] if "workers" in settings["given"] else None
    return choose_executor(probe, trials, seconds, SimpleNamespace(executor="auto", workers=workers), batch_size)


def build_probe(settings: dict):
    from attacks.probes import get_probe

    params = dict(settings["params"])
    name = settings.get("probe")
    if settings.get("classifier") and not (settings.get("mechanism") or name == "user"):
        raise ConfigurationError("classifier", "a learned classifier goes with the 'user' probe only")
    if settings.get("mechanism") or settings.get("datasets"):
        if name not in (None, "user"):
            raise ConfigurationError("mechanism", "--mechanism/--datasets go with the 'user' probe only")
        if not settings.get("mechanism") or not settings.get("datasets"):
            raise ConfigurationError("mechanism", "a user mechanism needs both --mechanism and --datasets")
        name = "user"
        params.update(function=settings["mechanism"], datasets=settings["datasets"])
        if settings.get("classifier"):
            params["classifier"] = settings["classifier"]
    if not name:
        raise ConfigurationError("probe", "name a probe (see 'dpaudit attack --list') or give --mechanism")
    refuse_run_elsewhere(name)
    check_params(name, params)
    if settings.get("timeout") is not None:
        if name != "user":
            raise ConfigurationError("timeout", "applies to user mechanisms (the 'user' probe) only")
        params["timeout"] = settings["timeout"]
    return get_probe(name, **params)


def refuse_run_elsewhere(name: str) -> None:
    """A probe that another command runs (its ``run_by``, e.g. ``flower-app``: ``dpaudit flower``) is refused in
    one line naming that command."""
    from attacks.probes import probe_class

    command = probe_class(name).run_by
    if command:
        raise ConfigurationError("probe", f"{name} is a one-run probe that `dpaudit attack` does not run; run it "
                                 f"as `{command}`")


def check_params(name: str, params: dict) -> None:
    """Types of the probe's parameters (``params.rate = "0.35"`` is an error, as is an unknown key)."""
    from accounting.strict import check_table, dataclass_schema
    from attacks.probes import PROBES, probe_class

    schema = dataclass_schema(probe_class(name), exclude=("timeout",))  # given as --timeout
    check_table("params", {k: v for k, v in {**PROBES[name][1], **params}.items() if v is not None}, schema)
    _no_unused_calibration(name, params)


def _no_unused_calibration(name: str, params: dict) -> None:
    """A Gaussian probe's ``epsilon`` and ``calibration`` only choose its noise: beside an explicit
    ``noise_multiplier`` they would be ignored (the claim is ``--claim-epsilon``)."""
    from attacks.probes import probe_class
    from attacks.probes.mechanisms import GaussianProbe

    if not issubclass(probe_class(name), GaussianProbe) or params.get("noise_multiplier") is None:
        return
    for key in ("epsilon", "calibration"):
        if key in params:
            raise ConfigurationError(
                f"params.{key}", "calibrates the noise, which noise_multiplier gives already; give one of them "
                "(a claim to test is --claim-epsilon)")


def _fmt(value, digits=4):
    if value is None:
        return "-"
    return "inf" if value == float("inf") else f"{value:.{digits}g}"


def _verdict_lines(result, out) -> None:
    if result.verdict is not None:
        v = result.verdict
        print(f"\nverdict     {v.status}  (p = {_fmt(v.p_value, 3)}, ceiling {_fmt(v.ceiling)}): {v.reason}", file=out)
    elif result.true_epsilon is not None and result.true_epsilon == float("inf"):
        print(
            "\nverdict     none (the described mechanism is not private, epsilon = inf; give --claim-epsilon "
            "to test a claim)",
            file=out,
        )
    else:
        print("\nverdict     none (no claim and no known tight epsilon; give --claim-epsilon)", file=out)


def print_table(result, out=None) -> None:
    out = sys.stdout if out is None else out
    p = result.probe
    print(f"probe       {probe_title(p)}, {p['threat_model']}: {p['description']}", file=out)
    print(
        f"trials      {result.trials} per world"
        + (f" (+{result.training_trials} to train the score)" if result.training_trials else "")
        + f", seed {result.seed}, {result.executor} x{result.workers}, {result.elapsed_seconds:.1f} s"
        + (f", {result.batches_resumed}/{result.batches_total} batches resumed" if result.batches_resumed else ""),
        file=out,
    )
    print(f"true eps    {_fmt(result.true_epsilon)} at delta {result.delta:.4g} (tight, described mechanism)", file=out)
    if result.claim_epsilon is not None:
        print(
            f"claim       epsilon {_fmt(result.claim_epsilon)} at delta {result.claim_delta:.4g} "
            f"({result.claim_source})",
            file=out,
        )
    reduction = result.reduction + (
        f" (+{result.pilot_trials} pilot trials per world fixed the thresholds)" if result.pilot_trials else ""
    )
    print(f"scores      {reduction}; backend {result.backend}", file=out)
    if result.batches_recomputed:
        print(f"checkpoint  {len(result.batches_recomputed)} damaged batch file(s) recomputed", file=out)
    print(f"AUC         {result.roc['auc']:.4f}", file=out)
    print(f"\n{'estimator':<24}{'epsilon >=':>11}{'delta':>11}{'conf.':>7}  kind", file=out)
    for b in result.bounds:
        kind = bound_kind(b.rigorous)
        print(f"{b.method:<24}{b.epsilon:>11.4f}{b.delta:>11.3g}{b.confidence:>7.4g}  {kind}", file=out)
    _verdict_lines(result, out)


def list_rows() -> list[list[str]]:
    """One row per registered probe: name, threat model and what it does (naming a planted bug; a one-run
    probe says so, and one that another command runs names that command: ``attack`` refuses it)."""
    from attacks.probes import PROBES, probe_class

    rows = []
    for name, (_, preset) in PROBES.items():
        try:
            cls = probe_class(name)
        except ConfigurationError as exc:
            rows.append([name, "-", f"unavailable: {exc}"])
            continue
        bug = preset.get("bug") or preset.get("planted_bug")
        what = f"PLANTED BUG {bug!r} in: {cls.description}" if bug else cls.description
        if cls.run_by:
            what = f"ONE RUN, not run by attack: use `{cls.run_by}`; {what}"
        elif cls.one_run:
            what = f"ONE RUN (--trials: its canaries, in one run): {what}"
        rows.append([name, cls.threat_model, what])
    return rows


def param_rows(name: str) -> list[list[str]]:
    """One row per ``--param`` key the probe ``name`` takes (``timeout`` is ``--timeout``): name, value kind,
    default (the registered name's preset applied) and meaning (``reports.parameter_meanings``)."""
    from attacks.probes import PROBES, probe_class
    from reports.parameter_meanings import probe_parameters

    cls = probe_class(name)  # an unknown name: ConfigurationError naming the known ones
    rows = probe_parameters(cls, PROBES[name][1])
    return [[key, kind, default, meaning or ""] for key, kind, default, meaning in rows]


def run(args) -> int:
    from attacks.attack import AttackOptions, run_attack
    from attacks.executors import BatchFailed
    from attacks.files import dumps_json

    if args.list:
        from reports.commands.common import print_table as print_columns

        if args.probe:
            print_columns(["parameter", "value", "default", "meaning"], param_rows(args.probe))
            return 0
        print_columns(["probe", "threat model", "what it does"], list_rows())
        return 0
    settings = _settings(args)
    probe = build_probe(settings)
    if probe.one_run:
        from reports.commands.attack_one_run import run_one_run

        return run_one_run(args, settings, probe)
    if settings["executor"] == "inprocess" and "workers" in settings["given"]:
        raise ConfigurationError(
            "workers", "the inprocess executor runs one batch at a time; workers go with --executor processes or dask"
        )
    from attacks.run_plan import check_trial_count

    trials = check_trial_count(settings["trials"])
    executor, workers = settings["executor"], settings["workers"]
    if executor == "auto":
        executor, workers = auto_executor(probe, trials, settings)
    elif workers is None:
        from reports.audit.probes import usable_cpus

        workers = 1 if executor == "inprocess" else usable_cpus()
    methods = settings.get("methods")
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    options = AttackOptions(
        executor=executor,
        workers=workers,
        scheduler=settings.get("scheduler"),
        checkpoint_dir=settings.get("checkpoint"),
        fresh=args.fresh,
        delta=settings.get("delta"),
        confidence=settings["confidence"],
        claim_epsilon=settings.get("claim_epsilon"),
        claim_delta=settings.get("claim_delta"),
        methods=methods,
        progress=not args.no_progress and sys.stderr.isatty(),
        batch_size=settings.get("batch_size"),
        reduction=settings.get("reduction", "auto"),
        backend=settings.get("backend", "numpy"),
        device=settings.get("device", "cpu"),
        log=lambda message: print(message, file=sys.stderr),
    )
    try:
        result = run_attack(probe, trials, seed=settings.get("seed"), options=options)
    except BatchFailed as exc:
        print(f"dpaudit attack: probe failed: {exc}", file=sys.stderr)
        return EXIT_PROBE_FAILED
    if args.format == "json":
        print(dumps_json(result.to_dict(), indent=2))
    else:
        print_table(result)
    return result.exit_code
