"""Import the benchmark scripts' modules (``benchmarks/mutation_*.py``) from a test."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def benchmarks_on_path():
    """``benchmarks/`` on ``sys.path`` for the imports inside the block only: it holds accounting.py and attacks.py,
    which must not shadow the packages for the rest of the suite."""
    saved = list(sys.path)
    sys.path.append(str(ROOT / "benchmarks"))
    try:
        yield
    finally:
        sys.path[:] = saved
