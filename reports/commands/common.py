"""Argument types and output helpers shared by the sub-commands."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from accounting.errors import ConfigurationError, require_number


def number_arg(field: str, **bounds):
    """An argparse ``type`` that validates a number and names ``field`` in its one-line error."""

    def parse(text: str) -> float:
        try:
            return require_number(field, text, **bounds)
        except ConfigurationError as exc:
            import argparse

            raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None

    parse.__name__ = field
    return parse


def add_old_spelling(parser, old: str, new: str, dest: str, **kwargs) -> None:
    """``old``, a retired spelling of the option ``new`` (same ``dest``): it still works, is hidden from --help, and
    warns once on stderr that ``new`` is the spelling now. ``parser`` may be a mutually exclusive group."""
    import argparse

    from accounting.vocabulary import defer_old_spelling

    base = parser._registry_get("action", kwargs.pop("action", None), None)

    class OldSpelling(base):
        def __call__(self, parser_, namespace, values, option_string=None):
            super().__call__(parser_, namespace, values, option_string)
            defer_old_spelling(option_string or old, new)  # shown once the whole command line parses

    parser.add_argument(old, dest=dest, action=OldSpelling, help=argparse.SUPPRESS, **kwargs)


def add_accountants_argument(parser) -> None:
    """``--accountants`` of the private runs, checked when the command line is read."""
    parser.add_argument("--accountants", default=None, type=accountant_names,
                        help="comma-separated accountant names (default all)")


def accountant_names(text: str) -> str:
    """An argparse ``type`` for ``--accountants``: the names are checked when the command line is read, so an
    unknown one is refused before a run starts (it was found after the whole run); returns ``text``."""
    import argparse

    from accounting.registry import parse_accountant_names

    try:
        parse_accountant_names(text)
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None
    return text


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_output_dir(field: str, path) -> Path:
    """Refuse, before any work, an output directory that cannot be written: one under a regular file,
    an existing file, or a place where nothing can be created (``/proc``, a read-only or unwritable
    directory). Nothing is left behind: writing is tested with a temporary directory that is removed.
    An empty name (``--out ""``) is refused: Path reads it as the current directory.
    """
    if not str(path).strip():
        raise ConfigurationError(field, "is empty; name a directory (. for the current one)")
    path = Path(path)
    try:
        if path.exists() and not path.is_dir():
            raise ConfigurationError(field, f"{path} exists and is not a directory")
        base = _nearest_existing(path.absolute())
        if not base.is_dir():
            raise ConfigurationError(field, f"{path} lies under {base}, which is a file, not a directory")
        tempfile.TemporaryDirectory(dir=base, prefix=".dpaudit-write-test-").cleanup()
    except OSError as exc:
        raise ConfigurationError(field, f"cannot write {str(path)[:80]}: {exc.strerror or exc}") from None
    return path


def check_output_file(field: str, path) -> Path:
    """Refuse, before any work, an output file path that is empty, names a directory or cannot be written."""
    if not str(path).strip():
        raise ConfigurationError(field, "is empty; name a file")
    path = Path(path)
    try:
        if path.is_dir():
            raise ConfigurationError(field, f"{path} is a directory; name a file")
        check_output_dir(field, path.absolute().parent)
        if path.exists() and not os.access(path, os.W_OK):
            raise ConfigurationError(field, f"{path} is not writable")
    except OSError as exc:  # a name too long, a loop of links, ...
        raise ConfigurationError(field, f"cannot write {str(path)[:80]}: {exc.strerror or exc}") from None
    return path


#: the link an audit's output directory holds (``reports.report_files.SET_LINK``; not imported: that module imports
#: this one)
AUDIT_SET_LINK = "report-set"

#: the endings of the old form of ``--out`` in the commands that write one file: ``--out FILE`` (see ``report_path``)
OLD_OUT_SUFFIXES = (".json", ".md", ".html")


def _old_out_form(out) -> bool:
    """``--out FILE``, the old form: a name ending in .json, .md or .html that is not an existing directory (nor
    written as one, with a trailing slash)."""
    path = Path(out)
    return (path.suffix.lower() in OLD_OUT_SUFFIXES and not path.is_dir()
            and not str(out).endswith((os.sep, "/")))


class ReportTarget(NamedTuple):
    """Where a command that writes one file writes it (``report_path``): the file, whether ``--out`` named it in the
    old form ``--out FILE`` (warned of once it is written), and the name the file takes in ``--out DIR``."""

    path: Path
    old_form: bool
    name: str


def report_path(field: str, out, name: str) -> ReportTarget:
    """The file ``--out DIR`` of a command that writes one (``flower``, ``opacus-check``, ``report``): ``DIR/name``,
    the directory made when the file is written; in the old form ``--out FILE`` (``_old_out_form``) the file itself,
    as before (``write_report`` warns once). Decided and checked once, before any work: ConfigurationError, one
    line, for an empty name, an existing file without one of those endings, a path under a file, an audit's output
    directory (its report would be mixed with this one), one that cannot be written."""
    if not str(out).strip():
        raise ConfigurationError(field, "is empty; name a directory (. for the current one)")
    path = Path(out)
    try:
        if _old_out_form(out):
            return ReportTarget(check_output_file(field, path), True, name)
        if path.exists() and not path.is_dir():
            raise ConfigurationError(field, f"{path} is a file, not a directory: --out DIR writes DIR/{name} (the "
                                     "old form --out FILE takes a name ending in .json, .md or .html)")
        target = check_output_dir(field, path) / name
        if (path / AUDIT_SET_LINK).is_symlink():
            raise ConfigurationError(field, f"{path} holds an audit's report ({path / AUDIT_SET_LINK}); writing {name} "
                                     "there would mix two reports: name another directory")
        if target.is_dir():
            raise ConfigurationError(field, f"{target} is a directory; --out DIR writes the file {name} there")
    except OSError as exc:  # a name too long, a loop of links, ...
        raise ConfigurationError(field, f"cannot write {str(path)[:80]}: {exc.strerror or exc}") from None
    return ReportTarget(target, False, name)


def write_report(target: ReportTarget, text: str) -> Path:
    """Write ``text`` atomically to the file ``report_path`` decided (the directory made if missing) and name it in
    one line on stderr; the old form ``--out FILE`` warns once too, after the command has run."""
    from accounting.vocabulary import defer_old_form
    from attacks.files import atomic_write_text

    path = atomic_write_text(target.path, text)
    print(f"wrote {path}", file=sys.stderr)
    if target.old_form:
        defer_old_form("--out FILE", f"--out FILE is the old form; --out names a directory now (it writes "
                                     f"DIR/{target.name}); wrote {path} this time")
    return path


def available_memory() -> int:
    """Bytes of memory available to a new allocation (MemAvailable on Linux, else physical memory)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_memory(field: str, size: int, bytes_per_unit: float, fixed: float = 0.0, what: str = "") -> None:
    """Refuse, before any work, a ``size`` whose estimated memory (``fixed + bytes_per_unit * size``)
    exceeds the memory available now; the error names the largest size that fits."""
    available = available_memory()
    need = fixed + bytes_per_unit * float(size)
    if need <= available:
        return
    largest = max(0, int((available - fixed) / bytes_per_unit))
    raise ConfigurationError(
        field,
        f"{size:g}{what} needs about {need / 2**30:.3g} GiB of memory, more than the "
        f"{available / 2**30:.3g} GiB available; at most about {largest:.3g} fits",
    )


RATE = dict(low=0, low_open=True, high=1)
POSITIVE = dict(low=0, low_open=True)
PROBABILITY = dict(low=0, low_open=True, high=1, high_open=True)
STEPS = dict(low=1, integer=True)


def mean_and_standard_error(curves):
    """Mean over runs (axis 0) of ``curves`` and its standard error (zeros for a single run)."""
    import numpy as np

    mean = curves.mean(axis=0)
    se = curves.std(axis=0, ddof=1) / np.sqrt(len(curves)) if len(curves) > 1 else np.zeros_like(mean)
    return mean, se


def format_number(value, digits: int = 4) -> str:
    if value is None:
        return "-"
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6):
        return f"{value:.{digits - 1}e}"
    return f"{value:.{digits}f}"


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows, strict=True)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    print(line.rstrip())
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())


def dumps(obj) -> str:
    """JSON of a result file or ``--format json``: ``attacks.files.json_safe`` (non-finite floats as the
    strings "inf", "-inf", "nan", as ``account`` writes them; never null, which reads as "no value")."""
    from attacks.files import json_safe

    return json.dumps(json_safe(obj), indent=2, allow_nan=False)


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


def probe_title(info: dict) -> str:
    """The probe as asked for, naming a planted bug: "bug-weak-noise (gaussian with the planted bug
    'weak-noise')"; a correct probe is its name."""
    asked = info.get("registry_name", info["name"])
    bug = info.get("planted_bug")
    if bug:
        return f"{asked} ({info['name']} with the planted bug {bug!r})"
    return asked if asked == info["name"] else f"{asked} ({info['name']})"


def one_run_reason(status: str, best: tuple[str, float] | None, p_value, ceiling: float, canaries: int, claim: float,
                   delta: float, confidence: float, more: str = "more canaries", decider: tuple | None = None,
                   rigorous: int = 1) -> str:
    """Why a one-run verdict (``estimate`` on one-run scores, ``attack`` on a one-run probe) is what it is; ``best``:
    the best rigorous bound as (method, epsilon); ``decider``: the test that rejected (``attacks.verdict.
    deciding_test``) over ``rigorous`` p-values; ``more``: what to add to test a claim above the ceiling."""
    if status == "VIOLATION":
        from attacks.verdict import violation_reason

        return violation_reason(decider, rigorous, claim, delta, confidence, best)
    if status == "INCONCLUSIVE":
        return (f"with {canaries} canaries no one-run audit can certify more than epsilon = {ceiling:.4g}, so the "
                f"claim {claim:g} cannot be refuted; use {more}.")
    joint = f", {confidence:.0%} confidence as the best of {rigorous}" if rigorous > 1 else ""
    shown = "no rigorous bound" if best is None else f"best rigorous bound {best[1]:.4g} ({best[0]}{joint})"
    return f"no evidence against the claim epsilon = {claim:g}: {shown}; ceiling {ceiling:.4g}."

