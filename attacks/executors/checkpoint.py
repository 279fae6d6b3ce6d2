"""Checkpoint directory for an attack: finished batches as ``.npy`` files, written atomically.

The directory holds ``manifest.json`` (probe name and parameters, seed, batch size) and one file per
finished batch named by world, batch index and size. A rerun with the same manifest loads finished
batches instead of recomputing them (a longer rerun reuses every full batch); a different attack in
the same directory is refused rather than silently mixed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from accounting.errors import ConfigurationError
from attacks.files import atomic_write

MANIFEST = "manifest.json"


def _normalise(obj):
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


class Checkpoint:
    """Finished batches of one attack in ``directory`` (created if missing)."""

    def __init__(self, directory, manifest: dict):
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError("checkpoint", f"cannot create {str(directory)!r}: {exc}") from None
        manifest = _normalise(manifest)
        path = self.directory / MANIFEST
        if path.exists():
            try:
                existing = json.loads(path.read_text())
            except (OSError, ValueError):
                raise ConfigurationError("checkpoint", f"{str(path)!r} is not a readable manifest") from None
            if existing != manifest:
                raise ConfigurationError("checkpoint", f"{str(self.directory)!r} holds a different attack "
                                                       "(probe, parameters, seed or batch size); use another "
                                                       "directory")
        else:
            text = json.dumps(manifest, indent=2, sort_keys=True).encode()
            atomic_write(path, lambda handle: handle.write(text))
        self.manifest = manifest

    @staticmethod
    def stored_seed(directory) -> int | None:
        """The seed entropy recorded in an existing checkpoint (to resume a run started without a seed)."""
        path = Path(directory) / MANIFEST
        try:
            return int(json.loads(path.read_text())["seed"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _path(self, task) -> Path:
        return self.directory / f"{task.key}-n{task.size}.npy"

    def load(self, task) -> np.ndarray | None:
        """The stored scores of ``task``, or None if the batch has not finished (or is unreadable)."""
        path = self._path(task)
        if not path.exists():
            return None
        try:
            scores = np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            return None
        return scores if scores.shape == (task.size,) else None

    def save(self, task, scores: np.ndarray) -> None:
        atomic_write(self._path(task), lambda handle: np.save(handle, np.asarray(scores, dtype=float)))
