"""Run a snippet against the code as it was before the trial axis (a benchmark peer, side by side).

``run_at_commit(code, commit)`` extracts ``accounting`` and ``dpfed`` of ``commit`` (``git archive``) into
a temporary folder and runs ``code`` there in a fresh interpreter; the snippet prints one JSON object,
which is returned. Used by ``fts_speed.py`` and ``pne_speed.py`` to time one-at-a-time runs of the
previous implementation next to the batched ones.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE_COMMIT = "3efc2c587d4df3deb33ae9a0ab25c193598b35c1"  # the last commit before the trial axis


def run_at_commit(code: str, commit: str = BASE_COMMIT) -> dict:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "accounting", "dpfed"], check=True, capture_output=True
    ).stdout
    with tempfile.TemporaryDirectory() as folder:
        tarfile.open(fileobj=io.BytesIO(archive)).extractall(folder, filter="data")
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=folder,
            env={"PYTHONPATH": folder},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    return json.loads(out.strip().splitlines()[-1])
