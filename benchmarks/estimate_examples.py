"""Writes the example score files of ``dpaudit estimate`` (README, section "dpaudit estimate").

    PYTHONPATH=. python benchmarks/estimate_examples.py [OUT_DIR]   (default: configs)

- ``estimate_example_multirun.csv``: 2,000 trials per world of a Gaussian mechanism whose score is the
  release itself, with sensitivity / noise std mu = 3 (say the noise was cut by a factor 3 from the
  calibration of a mu = 1 mechanism); header ``score,world``.
- ``estimate_example_onerun.csv``: 1,000 canaries of one run, each included with probability 1/2,
  score ~ N(mu, 1) if included and N(0, 1) if not, with mu = 2; header ``score,included``.

Fixed seeds, so the files are reproducible byte for byte.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def write(path: Path, header: str, scores: np.ndarray, labels: np.ndarray) -> None:
    lines = [header] + [f"{s:.6f},{int(b)}" for s, b in zip(scores, labels, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(out_dir: str = "configs") -> None:
    out = Path(out_dir)
    rng = np.random.default_rng(20251125)
    worlds = np.repeat([0, 1], 2000)
    write(out / "estimate_example_multirun.csv", "score,world", rng.normal(size=worlds.size) + 3.0 * worlds, worlds)
    included = rng.random(1000) < 0.5
    write(out / "estimate_example_onerun.csv", "score,included", rng.normal(size=1000) + 2.0 * included, included)


if __name__ == "__main__":
    main(*sys.argv[1:2])
