"""Atomic file writes: a reader sees the old file or the new one, never half of one.

Used by everything that saves work (probe checkpoints, audit sections, reports, run results).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, writer: Callable[[BinaryIO], object]) -> Path:
    """Call ``writer(handle)`` on a temporary file beside ``path``, flush it to disk, rename it into place.

    The file gets the usual permissions (mkstemp's are 0600); the directory is created if missing.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            writer(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def json_safe(value):
    """A JSON-ready copy of ``value``: the project's one sanitiser for everything it writes as JSON.

    Non-finite floats become the strings ``"inf"``, ``"-inf"`` and ``"nan"`` (so no ``NaN`` or
    ``Infinity`` token is ever written), numpy scalars and arrays become Python numbers and lists,
    tuples become lists, dataclasses become dicts, enums their values, paths strings.
    """
    import dataclasses
    import enum
    import math

    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, enum.Enum):
        return json_safe(value.value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: json_safe(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return json_safe(value.tolist())
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def dumps_json(value, *, indent: int | None = None) -> str:
    """``json.dumps`` of ``json_safe(value)``, keys sorted, never a NaN or Infinity token."""
    import json

    return json.dumps(json_safe(value), indent=indent, sort_keys=True, allow_nan=False)
