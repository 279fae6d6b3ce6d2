"""``dpaudit audit [CONFIG.toml] [--out DIR] [--trials N] [--executor ...] [--seed S]``.

Audits every target of the configuration (the built-in default without one): accountants, planner,
probes, utility run; writes ``report.json``, ``report.md`` and ``report.html`` to DIR (atomically) and
exits 0 on PASS, 1 on VIOLATION, 3 on INCONCLUSIVE, 2 on bad input. Finished sections and probe batches
are kept in ``DIR/.audit-work``, so running the same command again after an interruption resumes.
"""

from __future__ import annotations

import datetime as dt
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

from accounting.errors import ConfigurationError, require_number

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
EXECUTORS = ("inprocess", "processes", "dask")
WORK_DIR_NAME = ".audit-work"


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


def _command(args, seed: int) -> str:
    parts = ["dpaudit", "audit"] + ([str(args.config)] if args.config else [])
    parts += ["--seed", str(seed)]
    if args.trials:
        parts += ["--trials", str(args.trials)]
    if args.executor != "inprocess":
        parts += ["--executor", args.executor]
    return " ".join(parts)


def write_reports(report: dict, out_dir: Path) -> list[Path]:
    """Validate and write report.json, then report.md and report.html rendered from the saved JSON."""
    import json

    from attacks.files import atomic_write_text
    from reports.model import dumps_report, validate_report
    from reports.render_html import render_html
    from reports.render_markdown import render_markdown

    text = dumps_report(validate_report(report))
    saved = json.loads(text)  # render what was saved, so `dpaudit report` gives the same bytes
    paths = [out_dir / "report.json", out_dir / "report.md", out_dir / "report.html"]
    atomic_write_text(paths[0], text)
    atomic_write_text(paths[1], render_markdown(saved))
    atomic_write_text(paths[2], render_html(saved))
    return paths


def run(args) -> int:
    from attacks.audit import AuditOptions, run_audit
    from reports.audit_config import load_config
    from reports.model import new_report

    config = load_config(args.config)
    seed = (
        config["seed"] if args.seed is None else int(require_number("seed", args.seed, low=0, integer=True))
    )
    trials = None if args.trials is None else int(require_number("trials", args.trials, low=1, integer=True))
    workers = int(require_number("workers", args.workers, low=1, integer=True))
    if args.executor == "dask" and not args.scheduler:
        raise ConfigurationError("scheduler", "the dask executor needs --scheduler ADDRESS")
    from reports.commands.common import check_output_dir

    out_dir = check_output_dir("out", args.out)
    options = AuditOptions(
        seed=seed,
        confidence=config["confidence"],
        executor=args.executor,
        workers=workers,
        scheduler=args.scheduler,
        trials=trials,
        work_dir=str(out_dir / WORK_DIR_NAME),
        progress=not args.quiet,
    )
    started, clock = _now(), time.perf_counter()
    log = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    log(f"dpaudit audit: {len(config['targets'])} target(s) from {config['source']}, seed {seed}")
    targets = run_audit(config["targets"], options, log)
    provenance = {
        "packages": package_versions(),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "seed": seed,
        "config": config["raw"],
        "config_source": config["source"],
        "config_hash": config["hash"],
        "command": _command(args, seed),
        "started": started,
        "finished": _now(),
        "duration_seconds": round(time.perf_counter() - clock, 3),
        "resumed_sections": sorted(options.resumed),
    }
    report = new_report(config["title"], targets, provenance)
    paths = write_reports(report, out_dir)
    for line in report["summary"]:
        print(line)
    print(f"overall: {report['status']}; wrote {', '.join(str(p) for p in paths)}")
    return report["exit_code"]


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="audit a configuration (default: the built-in reference audit)",
        description=__doc__.split("\n\n")[1],
    )
    parser.add_argument(
        "config", nargs="?", default=None, help="audit configuration (TOML); default: built-in"
    )
    parser.add_argument("--out", default="audit-report", help="output directory (default: audit-report)")
    parser.add_argument(
        "--trials", type=int, default=None, help="trials per world for every probe (overrides)"
    )
    parser.add_argument("--executor", choices=EXECUTORS, default="inprocess", help="where probe batches run")
    parser.add_argument("--workers", type=int, default=2, help="workers of the processes executor")
    parser.add_argument("--scheduler", default=None, help="Dask scheduler address (with --executor dask)")
    parser.add_argument("--seed", type=int, default=None, help="seed (default: the configuration's)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(func=run)
