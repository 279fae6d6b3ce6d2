"""Saving finished audit work: a JSON cache of finished sections keyed by a hash of their inputs (so an
interrupted audit resumes, and a new trial budget reuses the accounting), and trimming of long results.

A section's key is its configuration (``key``) together with a fingerprint of the code and libraries
that computed it (``reports.audit.fingerprint``: this project's source, the installed versions of
dp-accounting, opacus, torch, numpy, scipy and scikit-learn, and for a probe the user's module and datasets). A
section is reused only if both match and its value still has the SHA-256 it was saved with (a damaged
entry, even one changed digit, is recomputed); otherwise it is recomputed and ``recomputed`` says why."""

from __future__ import annotations

import hashlib
import json
import traceback
from pathlib import Path

import numpy as np

from accounting.errors import ConfigurationError
from attacks.files import atomic_write_text, dumps_json
from reports.audit.model import Unavailable, from_plain

CACHE_VERSION = 3  # 3: the key holds the code and library fingerprint


def stable_hash(obj) -> str:
    """SHA-256 of the canonical JSON of ``obj``."""
    return hashlib.sha256(dumps_json(obj).encode()).hexdigest()


class SectionCache:
    """Finished sections of one target as JSON files keyed by a hash of their inputs.

    ``reused`` lists the sections taken from an earlier run in the same directory.
    """

    def __init__(self, root: str | None, target_index: int, reused: list, recomputed: list | None = None):
        self.root = None if root is None else Path(root) / f"target-{target_index}"
        self.reused = reused
        self.recomputed = [] if recomputed is None else recomputed

    def path(self, section: str) -> Path | None:
        return None if self.root is None else self.root / f"{section}.json"

    def load(self, section: str, key, kind, fingerprint: dict | None = None):
        """The stored section of type ``kind`` under ``key`` and ``fingerprint``, or None (absent, stale or
        damaged); a section stored under the same configuration but other code or libraries is recorded
        in ``recomputed`` with what changed."""
        path = self.path(section)
        if path is None or not path.exists():
            return None
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            if stored.get("key") != _full_key(key, fingerprint):
                self._stale(section, stored, key, fingerprint)
                return None
            if stored.get("value_sha256") != stable_hash(stored["value"]):
                self.recomputed.append(f"{self.root.name}/{section} (damaged: its checksum does not match)")
                return None
            value = from_plain(kind, stored["value"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None  # a damaged cache entry (empty, truncated, not a table) is recomputed
        self.reused.append(f"{self.root.name}/{section}")
        return value

    def _stale(self, section: str, stored: dict, key, fingerprint) -> None:
        from reports.audit.fingerprint import changed

        if stored.get("config_key") != stable_hash([CACHE_VERSION, key]):
            why = ["its configuration, trials, seed or batch size changed"]
        else:
            why = changed(stored.get("fingerprint"), fingerprint or {}) or ["the code that computed it changed"]
        self.recomputed.append(f"{self.root.name}/{section} ({'; '.join(why)})")

    def get_or_compute(self, section: str, key, compute, kind, fingerprint: dict | None = None):
        """The stored section, or ``compute()`` saved under ``key`` and ``fingerprint`` (a section that
        could not be produced is not saved, so it is retried next time)."""
        cached = self.load(section, key, kind, fingerprint)
        if cached is not None:
            return cached
        value = compute()
        path = self.path(section)
        if path is not None and not isinstance(value, Unavailable) and getattr(value, "outcome", "") != "failed":
            entry = {
                "key": _full_key(key, fingerprint),
                "config_key": stable_hash([CACHE_VERSION, key]),
                "fingerprint": fingerprint,
                "value": value,
                "value_sha256": stable_hash(value),
            }
            atomic_write_text(path, dumps_json(entry))
        return value


def _full_key(key, fingerprint) -> str:
    return stable_hash([CACHE_VERSION, key, fingerprint])


def guard(what: str, compute, unavailable=Unavailable):
    """Run ``compute``; a user error propagates, anything else becomes ``unavailable(reason)``."""
    try:
        return compute()
    except ConfigurationError:
        raise
    except Exception as exc:  # reported, never hidden, never turned into numbers
        detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return unavailable(f"{what} failed: {detail}")


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
