"""Constant-memory attacks (issue 11, must show 1): the Gaussian probe at (2, 1e-5) with 1e8 trials per
world on 2 worker processes, reduced to counts over pilot-fixed thresholds. Prints the time, the peak
resident memory of the parent and of the largest worker, the bounds, and, side by side in the same
process, the sorted-score path at 1e7 trials (time per trial and memory ratios).

Run: python benchmarks/counts_scale.py [--trials 1e8] [--sorted-trials 1e7]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]


def _peak_mib() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def _run(trials: int, reduction: str):
    from attacks.attack import run_attack

    started = time.perf_counter()
    result = run_attack("gaussian", trials, seed=2026, executor="processes", workers=2, reduction=reduction)
    return result, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=float, default=1e8)
    parser.add_argument("--sorted-trials", type=float, default=1e7)
    args = parser.parse_args()
    counts, counts_s = _run(int(args.trials), "counts")
    parent, worker = _peak_mib()
    bounds = ", ".join(f"{b.method} {b.epsilon:.3f}" for b in counts.bounds)
    print(
        f"[counts] {args.trials:.0e} trials/world (+{counts.pilot_trials} pilot), 2 processes: {counts_s:.1f} s; "
        f"peak RSS parent {parent:.0f} MiB, largest worker {worker:.0f} MiB; true eps "
        f"{counts.true_epsilon:.3f}; {bounds}"
    )
    sorted_result, sorted_s = _run(int(args.sorted_trials), "sorted")
    parent2, _ = _peak_mib()
    bounds = ", ".join(f"{b.method} {b.epsilon:.3f}" for b in sorted_result.bounds)
    print(
        f"[sorted] {args.sorted_trials:.0e} trials/world, 2 processes: {sorted_s:.1f} s; peak RSS parent "
        f"{parent2:.0f} MiB; {bounds}"
    )
    per_trial = (counts_s / args.trials) / (sorted_s / args.sorted_trials)
    print(
        f"[ratio] counts time per trial / sorted time per trial = {per_trial:.2f}; "
        f"sorted parent memory at {args.sorted_trials:.0e} / counts parent memory at {args.trials:.0e} = "
        f"{parent2 / parent:.2f}"
    )


if __name__ == "__main__":
    main()
