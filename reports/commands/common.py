"""Argument types and output helpers shared by the sub-commands."""

from __future__ import annotations

import json
import math

from accounting.errors import ConfigurationError, require_number


def number_arg(field: str, **bounds):
    """An argparse ``type`` that validates a number and names ``field`` in its one-line error."""
    def parse(text: str) -> float:
        try:
            return require_number(field, text, **bounds)
        except ConfigurationError as exc:
            import argparse

            raise argparse.ArgumentTypeError(str(exc).split(': ', 1)[-1]) from None
    parse.__name__ = field
    return parse


RATE = dict(low=0, low_open=True, high=1)
POSITIVE = dict(low=0, low_open=True)
PROBABILITY = dict(low=0, low_open=True, high=1, high_open=True)
STEPS = dict(low=1, integer=True)


def format_number(value, digits: int = 4) -> str:
    if value is None:
        return "-"
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6):
        return f"{value:.{digits - 1}e}"
    return f"{value:.{digits}f}"


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows, strict=True)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    print(line)
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)))


def dumps(obj) -> str:
    """JSON with non-finite floats turned into null (JSON has no NaN or infinity)."""
    def clean(value):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        return value
    return json.dumps(clean(obj), indent=2)


def write_curve_png(path, x, mean, se, title: str, xlabel: str, ylabel: str):
    """Plot a mean curve with a +-1 standard-error band and write it atomically as PNG."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attacks.files import atomic_write_bytes

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(x, mean, color="C0")
    ax.fill_between(x, mean - se, mean + se, color="C0", alpha=0.25)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return atomic_write_bytes(path, buffer.getvalue())
