"""Output shared by the FedZero and FKM run commands: regret table, privacy table, JSON and plot."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from accounting.errors import ConfigurationError
from attacks.files import atomic_write_bytes
from reports.commands.common import (
    STEPS,
    add_accountants_argument,
    format_number,
    number_arg,
    print_table,
    write_curve_png,
)
from reports.commands.run_files import add_force_argument, claim_outputs, stderr_cell, variant_stem
from reports.commands.run_progress import add_progress_argument, encode_result


def add_run_arguments(parser, private: bool) -> None:
    """The options every FedZero/FKM run shares: accountants (private runs), runs, seed, output, progress."""
    if private:
        add_accountants_argument(parser)
    parser.add_argument("--runs", type=number_arg("runs", **STEPS), default=1, help="independent runs (default 1)")
    parser.add_argument("--seed", type=number_arg("seed", low=0, integer=True), default=0, help="seed (default 0)")
    parser.add_argument(
        "--out", default="dpaudit-out", metavar="DIR",
        help="output directory: the JSON result and the plot (one name per variant)"
    )
    add_force_argument(parser)
    parser.add_argument("--save-transcript", action="store_true", help="include the transcript in the JSON")
    add_progress_argument(parser)


def regret_summary(curves: np.ndarray, label: str) -> tuple[np.ndarray, np.ndarray]:
    """Print the mean cumulative regret with standard errors at five rounds; return (mean, se)."""
    runs, horizon = curves.shape
    mean = curves.mean(axis=0)
    se = curves.std(axis=0, ddof=1) / np.sqrt(runs) if runs > 1 else np.zeros_like(mean)
    steps = sorted(set(np.linspace(1, horizon, min(horizon, 5)).astype(int)))
    print_table(
        ["round", label, "std error"],
        [[str(t), format_number(mean[t - 1], 2), stderr_cell(se[t - 1], runs)] for t in steps],
    )
    return mean, se


def privacy_section(run, args, **extra) -> dict:
    """Print epsilon at ``args.delta`` from every accountant for ``run.composition()``; return the JSON
    section (unit, delta, mechanism, releases per unit, accounting rows and ``extra``)."""
    from accounting.registry import account_all

    composition = run.composition()
    insist = args.accountants or ()  # accountants the user named run even when predicted slow
    rows = [a.to_dict() for a in account_all(composition, args.delta, args.accountants, insist=insist)]
    print_table(
        ["accountant", f"epsilon at delta={args.delta:g}", "status"],
        [
            [a["name"], format_number(a["epsilon"]), a["status"] + (f" ({a['reason']})" if a["reason"] else "")]
            for a in rows
        ],
    )
    return {
        "unit": args.unit,
        "delta": args.delta,
        "mechanism": repr(run.mechanism),
        "releases_per_unit": composition.total_count,
        "accounting": rows,
        **extra,
    }


def claim_run_outputs(args, *parts) -> list[Path]:
    """Before any work: the JSON and plot paths of this variant (``variant_stem(*parts)``) in ``args.out``,
    refused (exit 2) if one exists and ``--force`` was not given."""
    stem = variant_stem(*parts)
    return claim_outputs(args.out, [f"{stem}.json", f"{stem}.png"], args.force)


def write_outputs(args, run, paths: list[Path], payload: dict, mean: np.ndarray, se: np.ndarray, label: str) -> None:
    """Add the transcript if asked for; write the JSON and the plot (atomically) to ``paths`` (from
    ``claim_run_outputs``)."""
    if args.save_transcript:
        payload["transcript"] = run.transcript.to_dict()
    title = run.algorithm
    directory = Path(args.out)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError("out", f"cannot create {directory}: {exc.strerror}") from None
    json_path = atomic_write_bytes(paths[0], encode_result(args, paths[0], payload, len(mean) * int(args.runs)))
    png_path = write_curve_png(paths[1], np.arange(1, len(mean) + 1), mean, se, title, "round", label)
    print(f"\nwrote {json_path} and {png_path}")
