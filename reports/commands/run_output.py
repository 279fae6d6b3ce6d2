"""Output shared by the FedZero and FKM run commands: regret table, privacy table, JSON and plot."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from accounting.errors import ConfigurationError
from attacks.files import atomic_write_bytes
from reports.commands.common import dumps, format_number, print_table, write_curve_png


def regret_summary(curves: np.ndarray, label: str) -> tuple[np.ndarray, np.ndarray]:
    """Print the mean cumulative regret with standard errors at five rounds; return (mean, se)."""
    runs, horizon = curves.shape
    mean = curves.mean(axis=0)
    se = curves.std(axis=0, ddof=1) / np.sqrt(runs) if runs > 1 else np.zeros_like(mean)
    steps = sorted(set(np.linspace(1, horizon, min(horizon, 5)).astype(int)))
    print_table(
        ["round", label, "std error"],
        [[str(t), format_number(mean[t - 1], 2), format_number(se[t - 1], 2)] for t in steps],
    )
    return mean, se


def privacy_table(composition, delta: float, accountants) -> list[dict]:
    """Print epsilon at ``delta`` from every accountant for ``composition``; return the rows."""
    from accounting.registry import account_all

    rows = [a.to_dict() for a in account_all(composition, delta, accountants)]
    print_table(
        ["accountant", f"epsilon at delta={delta:g}", "status"],
        [
            [a["name"], format_number(a["epsilon"]), a["status"] + (f" ({a['reason']})" if a["reason"] else "")]
            for a in rows
        ],
    )
    return rows


def write_outputs(out: str, stem: str, payload: dict, mean: np.ndarray, se: np.ndarray, title: str, label: str) -> None:
    """Write ``stem.json`` and ``stem.png`` (atomically) into ``out``."""
    directory = Path(out)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError("out", f"cannot create {directory}: {exc.strerror}") from None
    json_path = atomic_write_bytes(directory / f"{stem}.json", dumps(payload).encode())
    png_path = write_curve_png(directory / f"{stem}.png", np.arange(1, len(mean) + 1), mean, se, title, "round", label)
    print(f"\nwrote {json_path} and {png_path}")
