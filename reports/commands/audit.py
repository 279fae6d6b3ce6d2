"""``dpaudit audit [CONFIG.toml] [--out DIR] [--trials N] [--executor ...] [--seed S] [--allow-code]``.

Audits every target of the configuration (the built-in default without one): accountants, planner,
probes, utility run. Before any work it prints what each probe will run (trials, a time estimate).
Writes report.json, report.md and report.html to DIR as one set (a reader sees the old set or the new
one, never a mix) while DIR is locked against a second audit. Finished sections and probe batches are
kept in DIR/.audit-work, so running the same command again after an interruption resumes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import platform
import shlex
import shutil
import sys
import time
from importlib import metadata
from pathlib import Path

from accounting.errors import ConfigurationError

PACKAGES = (
    "dpfed-audit",
    "numpy",
    "scipy",
    "dp-accounting",
    "opacus",
    "torch",
    "scikit-learn",
    "matplotlib",
    "jinja2",
    "jsonschema",
    "dask",
    "tqdm",
)
EXECUTORS = ("auto", "inprocess", "processes", "dask")
WORK_DIR_NAME = ".audit-work"
FINISHED_MARKER = "finished"


def package_versions() -> dict:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _command(args) -> str:
    """The command line as typed (``args.argv`` when the CLI records it), else rebuilt from every option."""
    argv = getattr(args, "argv", None)
    if argv is not None:
        return shlex.join(["dpaudit", *argv])
    parts = ["dpaudit", "audit"] + ([str(args.config)] if args.config else []) + ["--out", str(args.out)]
    for flag, value in (
        ("--seed", args.seed),
        ("--trials", args.trials),
        ("--executor", args.executor),
        ("--workers", args.workers),
        ("--scheduler", args.scheduler),
        ("--budget", None if args.budget is None else f"{args.budget:g}s"),
    ):
        if value is not None and not (flag == "--executor" and value == "auto"):
            parts += [flag, str(int(value) if isinstance(value, float) and value.is_integer() else value)]
    parts += [flag for flag, on in (("--allow-code", args.allow_code), ("--no-progress", args.no_progress)) if on]
    return shlex.join(parts)


def render_report_set(report: dict) -> dict[str, str]:
    """report.json, report.md and report.html of a validated report (both renderings from the saved JSON,
    so `dpaudit report` gives the same bytes)."""
    import json

    from reports.model import dumps_report, validate_report
    from reports.render_html import render_html
    from reports.render_markdown import render_markdown

    text = dumps_report(validate_report(report))
    saved = json.loads(text)
    return {"report.json": text, "report.md": render_markdown(saved), "report.html": render_html(saved)}


def _options(args, config: dict, out_dir: Path):
    from reports.audit import AuditOptions

    if args.executor == "dask" and not args.scheduler:
        raise ConfigurationError("scheduler", "the dask executor needs --scheduler ADDRESS")
    if args.scheduler and args.executor != "dask":
        raise ConfigurationError("scheduler", "--scheduler goes with --executor dask")
    if args.executor == "inprocess" and args.workers is not None:
        raise ConfigurationError(
            "workers", "the inprocess executor runs one batch at a time; workers go with --executor auto or processes"
        )
    return AuditOptions(
        seed=config["seed"] if args.seed is None else int(args.seed),
        confidence=config["confidence"],
        executor=args.executor,
        workers=None if args.workers is None else int(args.workers),
        scheduler=args.scheduler,
        trials=None if args.trials is None else int(args.trials),
        budget=args.budget,
        work_dir=str(out_dir / WORK_DIR_NAME),
        progress=not args.no_progress and sys.stderr.isatty(),  # bars as attack's and run's: on a terminal
    )


def _provenance(args, config: dict, options, started: str, clock: float, reused_from) -> dict:
    return {
        "packages": package_versions(),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "seed": options.seed,
        "config": config["raw"],
        "config_source": config["source"],
        "config_hash": config["hash"],
        "command": _command(args),
        "started": started,
        "finished": _now(),
        "duration_seconds": round(time.perf_counter() - clock, 3),
        "reused_sections": sorted(options.reused),
        "reused_from": reused_from if options.reused else None,
    }


def reuse_lines(options) -> list[str]:
    """What this audit took from an earlier run in the same --out, why that is safe, and what it
    recomputed because the code or libraries changed (printed on stdout, not only in report.md)."""
    from reports.audit.fingerprint import LIBRARIES

    lines = []
    if options.reused:
        lines.append(
            f"reused {len(options.reused)} saved section(s) from an earlier run in this --out: "
            f"{', '.join(sorted(options.reused))}; safe because each was saved under the same configuration, "
            "trials, seed and batch size, the same source of this project's packages (and, for a user probe, "
            f"of its module and datasets file) and the same {', '.join(LIBRARIES[:-1])} and {LIBRARIES[-1]} versions"
        )
    if options.recomputed:
        lines.append(
            f"recomputed {len(options.recomputed)} saved section(s) that no longer match: "
            + "; ".join(sorted(options.recomputed))
        )
    return lines


def _previous_run(work_dir: Path) -> str:
    """'finished run' if the last audit in this directory finished, else 'interrupted run'."""
    marker = work_dir / FINISHED_MARKER
    finished = marker.exists()
    if finished:
        marker.unlink()
    return "finished run" if finished else "interrupted run"


@contextlib.contextmanager
def _removed_if_refused(out_dir: Path):
    """An exit-2 refusal (ConfigurationError) inside the block removes ``out_dir`` if this run created it,
    so a refused audit leaves no files; a directory that existed before is left as it was found."""
    existed = out_dir.exists()
    try:
        yield
    except ConfigurationError:
        if not existed and out_dir.is_dir():
            shutil.rmtree(out_dir, ignore_errors=True)
        raise


def run(args) -> int:
    from dpfed.flower.quiet import quiet_flower_log
    from reports.audit import load_config, run_audit
    from reports.audit.runner import plan_audit
    from reports.model import new_report
    from reports.report_files import locked_out_dir, swap_in_report_set

    config = load_config(args.config, allow_code=args.allow_code)
    out_dir = Path(args.out)
    options = _options(args, config, out_dir)
    log = (lambda msg: None) if args.no_progress else (lambda msg: print(msg, file=sys.stderr, flush=True))
    planned = plan_audit(config["targets"], options)  # a bad target or probe stops here, before the lock
    if options.executor == "dask":  # an unreachable scheduler is refused before anything is written
        from attacks.executors.dask_cluster import check_scheduler

        check_scheduler(options.scheduler)
    with _removed_if_refused(out_dir), locked_out_dir(out_dir):
        work_dir = out_dir / WORK_DIR_NAME
        reused_from = _previous_run(work_dir)
        started, clock = _now(), time.perf_counter()
        log(f"dpaudit audit: {len(config['targets'])} target(s) from {config['source']}, seed {options.seed}")
        with quiet_flower_log(args.no_progress):  # a Flower target's own INFO log is progress too
            results = run_audit(planned, options, log)
        report = new_report(config["title"], results, _provenance(args, config, options, started, clock, reused_from))
        paths = swap_in_report_set(out_dir, render_report_set(report))
        work_dir.mkdir(parents=True, exist_ok=True)
        (work_dir / FINISHED_MARKER).write_text(report["provenance"]["finished"] + "\n", encoding="utf-8")
    from reports.render_text import overall_headline, summary_lines

    for line in summary_lines(report):
        print(line)
    for line in reuse_lines(options):
        print(line)
    print(f"overall: {overall_headline(report)}; wrote {', '.join(str(p) for p in paths)}")
    return report["exit_code"]


def add_parser(subparsers) -> None:

    from reports.commands.common import STEPS, add_old_spelling, number_arg
    from reports.commands.run_progress import add_progress_argument
    from reports.exit_codes import EXIT_CODE_HELP

    parser = subparsers.add_parser(
        "audit",
        help="audit a configuration (default: the built-in reference audit)",
        description=__doc__.split("\n\n")[1],
        epilog=EXIT_CODE_HELP,
    )
    parser.add_argument("config", nargs="?", default=None, help="audit configuration (TOML); default: built-in")
    parser.add_argument(
        "--out", default="audit-report", metavar="DIR",
        help="output directory (default: audit-report); locked while the audit runs"
    )
    parser.add_argument(
        "--trials",
        type=number_arg("trials", **STEPS),
        default=None,
        help="trials per world for every mechanism-level probe, for example 1e5 (end-to-end "
        "probes keep their configured budget)",
    )
    add_executor_arguments(parser)
    parser.add_argument(
        "--seed", type=number_arg("seed", low=0, integer=True), default=None, help="seed (default: the configuration's)"
    )
    parser.add_argument(
        "--allow-code",
        action="store_true",
        help="allow the configuration's user probe to import the Python callable it names",
    )
    add_budget_argument(parser)
    add_progress_argument(parser, help="no progress on stderr: neither the plan, each section as it starts nor "
                          "the bars (shown on a terminal only), nor Flower's own INFO log")
    # the earlier spelling (BENCHMARKS.md's commands), kept working but not shown
    add_old_spelling(parser, "--quiet", "--no-progress", "no_progress", action="store_true")
    parser.set_defaults(func=run)


def add_executor_arguments(parser) -> None:
    from reports.commands.common import STEPS, number_arg

    parser.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="auto",
        help="where probe batches run (default auto: worker processes for probes estimated over "
        "10 s, in this process otherwise; every executor gives the same numbers)",
    )
    parser.add_argument(
        "--workers",
        type=number_arg("workers", **STEPS),
        default=None,
        help="worker processes (default: the CPUs this process may use)",
    )
    parser.add_argument("--scheduler", default=None, help="Dask scheduler address (with --executor dask)")


def add_budget_argument(parser) -> None:
    parser.add_argument(
        "--budget",
        type=budget_arg,
        default=None,
        help="wall time for the probes whose trials the targets plan (no trials in the configuration), e.g. 10m, "
        "90s or 1h: each such probe's planned trials are cut to what a timed first batch says fits its share, and "
        "where too few would remain to certify the claim, the target's one-run probe runs instead (default: none)",
    )


def budget_arg(text: str) -> float:
    """``duration_arg`` as an argparse ``type`` (its one-line error names ``--budget``)."""
    import argparse

    try:
        return duration_arg(text)
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None


def duration_arg(text: str) -> float:
    """``10m``, ``90s``, ``1h`` or plain seconds, as seconds (a ConfigurationError naming ``budget`` otherwise)."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", str(text))
    if not match or float(match.group(1)) <= 0:
        raise ConfigurationError("budget", f"expected a positive duration such as 10m, 90s or 1h, got {text!r}")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]
