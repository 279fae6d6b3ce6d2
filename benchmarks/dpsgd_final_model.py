"""Final-model (black-box) DP-SGD probe: the batched trainer against one opacus run per trial (BENCHMARKS.md,
"DP-SGD audit target (issue 31)").

1. Side by side at a small budget (``--small`` trials per world, both worlds): seconds per trial of
   ``trainer = "opacus"`` (one opacus training per trial) and ``trainer = "batched"`` (``dpfed.dpsgd.batched``),
   and their ratio.
2. The batched probe at ``--trials`` per world through ``run_attack`` (Clopper-Pearson at 95%), in this
   process: the wall and CPU seconds and the bounds.

Set-up: the bundled example (logistic regression on scikit-learn's breast-cancer data, rate 1/2, 20 steps,
clip 1, noise multiplier 2.64), canary norm 10.

    PYTHONPATH=. python -P benchmarks/dpsgd_final_model.py [--trials 10000] [--small 20] [--device cpu]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from attacks.attack import run_attack
from attacks.backend import on_backend
from attacks.probes import get_probe


def timed_scores(probe, trials: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    for world in (0, 1):
        probe.scores(world, trials, np.random.default_rng(world))
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--small", type=int, default=20)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores)")
    small = {}
    for trainer in ("opacus", "batched"):
        probe = get_probe("dpsgd-final-model", trainer=trainer)
        timed_scores(probe, 2)  # warm-up (imports, first-call costs)
        small[trainer] = timed_scores(probe, args.small)
        wall, cpu = small[trainer]
        print(f"{trainer:8s} {args.small} trials per world: wall {wall:.2f} s, cpu {cpu:.2f} s, "
              f"{1e3 * wall / (2 * args.small):.1f} ms per trial (wall)")
    ratio_wall = small["opacus"][0] / small["batched"][0]
    ratio_cpu = small["opacus"][1] / small["batched"][1]
    print(f"ratio opacus / batched at {args.small} trials per world: wall {ratio_wall:.1f}x, cpu {ratio_cpu:.1f}x")
    probe = get_probe("dpsgd-final-model", trainer="batched")
    if args.device != "cpu":
        probe = on_backend(probe, "torch", args.device)
    wall, cpu = time.perf_counter(), time.process_time()
    result = run_attack(probe, args.trials, seed=1, executor="inprocess", delta=1e-5, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    best = {b.method: b.epsilon for b in result.bounds}
    print(f"batched {args.trials} trials per world on {args.device}: wall {wall:.1f} s, cpu {cpu:.1f} s; "
          f"bounds {best}; true epsilon {result.true_epsilon:.3f}")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
