"""The output directory of an audit: locked for the run, its report files swapped in as one set.

Layout of ``OUT``::

    report.json -> report-set/report.json     (likewise report.md, report.html: fixed links)
    report-set  -> .report-sets/<id>          (one link, replaced atomically by each run)
    .report-sets/<id>/report.{json,md,html}   (a complete set, written before the link points at it)
    .audit-lock                               (flock held while an audit runs)

A reader therefore sees the complete old set or the complete new set, whatever kills the writer and
whenever; a second audit into the same directory stops at once (exit 2) while the first runs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from accounting.errors import ConfigurationError

REPORT_NAMES = ("report.json", "report.md", "report.html")
SET_LINK = "report-set"
SETS_DIR = ".report-sets"
LOCK_NAME = ".audit-lock"


def prepare_out_dir(out_dir: Path) -> Path:
    """Create ``out_dir`` (ConfigurationError if it cannot be a writable directory)."""
    from reports.commands.common import check_output_dir

    check_output_dir("out", out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError("out", f"cannot create {out_dir} ({exc.strerror})") from None
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise ConfigurationError("out", f"{out_dir} is not writable")
    for name in (*REPORT_NAMES, SET_LINK):  # each becomes a link; a directory there cannot be replaced
        if (out_dir / name).is_dir() and not (out_dir / name).is_symlink():
            raise ConfigurationError("out", f"{out_dir / name} is a directory; the audit writes its {name} link there")
    return out_dir


@contextlib.contextmanager
def locked_out_dir(out_dir: Path):
    """Hold an exclusive lock on ``out_dir`` for the block; ConfigurationError if another run holds it."""
    import fcntl

    prepare_out_dir(out_dir)
    try:
        handle = open(out_dir / LOCK_NAME, "a+")  # noqa: SIM115 - held for the whole block
    except OSError as exc:
        raise ConfigurationError("out", f"cannot lock {out_dir} ({exc.strerror})") from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigurationError(
                "out", f"{out_dir} is in use by another audit; wait for it or choose another --out"
            ) from None
        yield out_dir
    finally:
        handle.close()


def _replace_link(link: Path, target: str) -> None:
    """Point ``link`` at ``target`` atomically (a new link renamed over the old entry)."""
    tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, link)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def swap_in_report_set(out_dir: Path, texts: dict[str, str]) -> list[Path]:
    """Write ``texts`` (file name -> content) as a new set and make it the current one atomically."""
    sets = out_dir / SETS_DIR
    sets.mkdir(exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="set-", dir=sets))
    for name, text in texts.items():
        with open(staging / name, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(staging / name, 0o644)
    os.chmod(staging, 0o755)
    _fsync_dir(staging)
    for name in texts:  # fixed links first (dangling until the first set exists), then the one swap
        link = out_dir / name
        if not (link.is_symlink() and os.readlink(link) == f"{SET_LINK}/{name}"):
            _replace_link(link, f"{SET_LINK}/{name}")
    _replace_link(out_dir / SET_LINK, f"{SETS_DIR}/{staging.name}")
    _fsync_dir(out_dir)
    for old in sets.iterdir():
        if old != staging:
            shutil.rmtree(old, ignore_errors=True)
    return [out_dir / name for name in texts]
