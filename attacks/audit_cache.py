"""Saving finished audit work: a JSON cache of finished sections keyed by a hash of their inputs (so
an interrupted audit resumes), atomic writes, and small helpers that make results JSON-safe."""

from __future__ import annotations

import hashlib
import json
import traceback
from pathlib import Path

import numpy as np

from accounting.errors import ConfigurationError
from attacks.files import atomic_write_text

CACHE_VERSION = 1


def stable_hash(obj) -> str:
    """SHA-256 of the canonical JSON of ``obj``."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _atomic_json(path: Path, data) -> None:
    atomic_write_text(path, json.dumps(data, sort_keys=True, allow_nan=False))


def _plain(value):
    """JSON-safe copy (numpy values to Python, NaN/inf to None)."""
    return json.loads(
        json.dumps(value, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o), allow_nan=True)
        .replace("NaN", "null")
        .replace("-Infinity", "null")
        .replace("Infinity", "null")
    )


class SectionCache:
    """Finished sections of one target as JSON files keyed by a hash of their inputs."""

    def __init__(self, root: str | None, target_index: int, options):
        self.root = None if root is None else Path(root) / f"target-{target_index}"
        self.options = options

    def path(self, section: str) -> Path | None:
        return None if self.root is None else self.root / f"{section}.json"

    def get_or_compute(self, section: str, key, compute):
        key_hash = stable_hash([CACHE_VERSION, key])
        path = self.path(section)
        if path is not None and path.exists():
            try:
                stored = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                stored = None  # a damaged entry (empty, truncated, not JSON) is recomputed
            if isinstance(stored, dict) and stored.get("key") == key_hash and "value" in stored:
                self.options.resumed.append(f"{self.root.name}/{section}")
                return stored["value"]
        value = _plain(compute())
        unavailable = isinstance(value, dict) and value.get("available") is False
        if path is not None and not unavailable:  # a missing piece is retried next time
            _atomic_json(path, {"key": key_hash, "value": value})
        return value


def guard(what: str, compute):
    """Run ``compute``; a user error propagates, anything else becomes a 'not available' section."""
    try:
        return compute()
    except ConfigurationError:
        raise
    except (ImportError, AttributeError) as exc:
        return {
            "available": False,
            "reason": f"{what} is not available in this build ({type(exc).__name__}: {exc})",
        }
    except Exception as exc:  # reported, never hidden, never turned into numbers
        detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return {"available": False, "reason": f"{what} failed: {detail}"}


def trim_details(details: dict) -> dict:
    """Keep the scalar evidence of a bound; long arrays (all thresholds tried) stay out of the report."""
    out = {}
    for k, v in (details or {}).items():
        if isinstance(v, (int, float, str, bool)) or v is None:
            out[k] = v
        elif isinstance(v, (list, tuple)) and len(v) <= 4 and all(isinstance(x, (int, float)) for x in v):
            out[k] = list(v)
    return out


def thin_curve(xs, ys, points: int = 400) -> tuple[list, list]:
    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if xs.size <= points:
        return xs.tolist(), ys.tolist()
    idx = np.unique(np.geomspace(1, xs.size, points).astype(int) - 1)
    return xs[idx].tolist(), ys[idx].tolist()
