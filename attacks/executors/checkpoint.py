"""Checkpoint directory for an attack: finished batches, each with its checksum, written atomically.

``manifest.json`` records what produced the batches: the probe and all its parameters, the hashes of
the code behind it (the probe's and the mechanisms' modules; the user function's module and the
datasets' content for the user probe), the project version, the seed, the batch size, the torch
device and the reduction (scores, or counts over a threshold grid, stored beside it as ``grid.bin``, with
the trials, delta and confidence that chose it). A rerun with an
identical manifest loads the finished batches instead of recomputing them; any difference refuses to
resume (``ConfigurationError`` naming the keys) unless ``fresh`` is asked for, which discards the old
batches. A directory holding files but no manifest is refused, never adopted.

Every batch file ends with the SHA-256 of its content; a batch that is unreadable, empty, truncated or
fails its checksum is reported (``corrupted``) and recomputed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import numpy as np

from accounting.errors import ConfigurationError
from attacks.files import atomic_write_bytes

MANIFEST = "manifest.json"
GRID = "grid.bin"
SUFFIX = ".npy"  # a batch file is a .npy payload followed by its 32-byte SHA-256
DIGEST = 32


def project_version() -> str:
    """The installed dpfed-audit version, else the one in this checkout's pyproject.toml."""
    import tomllib
    from importlib import metadata

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        return tomllib.loads(pyproject.read_text())["project"]["version"]
    except (OSError, KeyError, ValueError):
        try:
            return metadata.version("dpfed-audit")
        except metadata.PackageNotFoundError:
            return "unknown"


def _normalise(obj):
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


def _sealed(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array, dtype=float), allow_pickle=False)
    payload = buffer.getvalue()
    return payload + hashlib.sha256(payload).digest()


def _unsealed(data: bytes) -> np.ndarray | None:
    payload, digest = data[:-DIGEST], data[-DIGEST:]
    if len(data) <= DIGEST or hashlib.sha256(payload).digest() != digest:
        return None
    try:
        return np.load(io.BytesIO(payload), allow_pickle=False)
    except (OSError, ValueError):
        return None


def _check_creatable(directory: Path) -> None:
    """Refuse, without creating anything, a directory that could not be created: one under a regular
    file or in a place that is not writable."""
    base = directory.absolute()
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise ConfigurationError("checkpoint", f"cannot create {str(directory)!r}: {base} is not a directory")
    if not os.access(base, os.W_OK | os.X_OK):
        raise ConfigurationError("checkpoint", f"cannot create {str(directory)!r}: {base} is not writable")


class Checkpoint:
    """Finished batches of one attack in ``directory``.

    Opening one only checks: the directory and its manifest are created (and, with ``fresh``, an old
    checkpoint discarded) when the first batch or grid is saved, so a run refused before any work (exit
    2: an unreachable Dask scheduler, a bad option found later) leaves no file behind."""

    def __init__(self, directory, manifest: dict, fresh: bool = False):
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise ConfigurationError("checkpoint", f"{str(directory)!r} is not a directory")
        _check_creatable(self.directory)
        self.manifest = _normalise(manifest)
        self.corrupted: list[str] = []
        self._written = False
        self._discard_first = False
        path = self.directory / MANIFEST
        if path.exists():
            self._written = self._check_existing(path, fresh)
        elif self.directory.is_dir() and any(self.directory.iterdir()):
            raise ConfigurationError(
                "checkpoint",
                f"{str(directory)!r} holds files but no {MANIFEST}: it "
                "is not an attack checkpoint; use an empty directory",
            )

    def _commit(self) -> None:
        """Before the first write: discard an old checkpoint (``fresh``), create the directory and write
        the manifest."""
        if self._written:
            return
        if self._discard_first:
            self.discard()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError("checkpoint", f"cannot create {str(self.directory)!r}: {exc}") from None
        text = json.dumps(self.manifest, indent=2, sort_keys=True).encode()
        if self._discard_first:
            atomic_write_bytes(self.directory / MANIFEST, text)
        else:
            self._claim(text)
        self._written = True

    def _claim(self, text: bytes) -> None:
        """Write the manifest only if none is there (a hard link of a complete temporary file, so atomic): an
        attack started meanwhile in the same directory keeps it, and a different one is refused here; a
        plain replace let the second attack's manifest cover the first one's batches."""
        path = self.directory / MANIFEST
        tmp = path.with_name(f".{MANIFEST}.{os.getpid()}.tmp")
        atomic_write_bytes(tmp, text)
        try:
            os.link(tmp, path)
        except FileExistsError:
            try:
                existing = json.loads(path.read_text())
            except (OSError, ValueError):
                existing = None
            if existing != self.manifest:
                raise ConfigurationError(
                    "checkpoint", f"{str(self.directory)!r} was taken by a different attack running at the same "
                    "time; use another directory") from None
        except OSError:  # a file system without hard links
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    def _check_existing(self, path: Path, fresh: bool) -> bool:
        """True if the stored manifest is this attack's (and not ``fresh``); with ``fresh`` the old checkpoint,
        this attack's or another's, is discarded at the first write; otherwise a different one is refused."""
        try:
            existing = json.loads(path.read_text())
        except (OSError, ValueError):
            existing = None
        if existing == self.manifest and not fresh:  # with fresh even this attack's own batches are redone
            return True
        if not fresh:
            if not isinstance(existing, dict):
                raise ConfigurationError(
                    "checkpoint",
                    f"{str(path)!r} is not a readable manifest; rerun with --fresh to discard the checkpoint",
                )
            keys = sorted(k for k in set(existing) | set(self.manifest) if existing.get(k) != self.manifest.get(k))
            raise ConfigurationError(
                "checkpoint",
                f"{str(self.directory)!r} was written by a different attack "
                f"({', '.join(keys)} differ); rerun with --fresh to "
                "discard it, or use another directory",
            )
        self._discard_first = True
        return False

    def discard(self) -> None:
        """Remove the manifest, the grid and every batch file of this directory (nothing else)."""
        for item in self.directory.iterdir():
            if item.name in (MANIFEST, GRID) or item.suffix == SUFFIX:
                item.unlink()

    @staticmethod
    def stored_seed(directory) -> int | None:
        """The seed entropy recorded in an existing checkpoint (to resume a run started without a seed)."""
        path = Path(directory) / MANIFEST
        try:
            return int(json.loads(path.read_text())["seed"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @property
    def kind(self) -> str:
        """What a batch file holds: ``scores`` or, for a counts reduction, ``counts``."""
        return "counts" if self.manifest.get("reduction") == "counts" else "scores"

    def _path(self, task) -> Path:
        middle = ".counts" if self.kind == "counts" else ""
        return self.directory / f"{task.key}-n{task.size}{middle}{SUFFIX}"

    def _read(self, path: Path, label: str) -> np.ndarray | None:
        if not path.exists():
            return None
        try:
            data = path.read_bytes()
        except OSError:
            data = b""
        array = _unsealed(data)
        if array is None:
            self.corrupted.append(label)
        return array

    def load(self, task, size: int | None = None) -> np.ndarray | None:
        """The stored array of ``task`` (``size`` entries, default the batch size), or None if the batch
        has not finished; a damaged batch file is recorded in ``corrupted`` and also gives None."""
        if not self._written:  # nothing of this attack is stored yet (or only an old one, to discard)
            return None
        array = self._read(self._path(task), task.key)
        expected = (task.size if size is None else size,)
        if array is not None and array.shape != expected:
            self.corrupted.append(task.key)
            return None
        return array

    def save(self, task, array: np.ndarray) -> None:
        self._commit()
        atomic_write_bytes(self._path(task), _sealed(array))

    def load_grid(self) -> dict | None:
        """The threshold grid stored by the first run of a counts reduction (None if absent or damaged)."""
        array = self._read(self.directory / GRID, GRID) if self._written else None
        if array is None:
            return None
        try:
            return json.loads(array.astype(np.uint8).tobytes().decode())
        except (ValueError, UnicodeDecodeError):
            self.corrupted.append(GRID)
            return None

    def save_grid(self, grid: dict) -> None:
        self._commit()
        data = np.frombuffer(json.dumps(grid).encode(), dtype=np.uint8).astype(float)
        atomic_write_bytes(self.directory / GRID, _sealed(data))
