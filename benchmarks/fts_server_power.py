"""DP-FTS-DE server probe at full scale (issue 11, must show 3): q = 0.35, z = 1, T = 60, N = 29, uniform
weights (PLD epsilon 10.38 at delta = 29^-1.1). Runs the probe on 2 worker processes with counts over
pilot-fixed thresholds and prints the time, the bounds and their ratio to the PLD value; the old
all-agents scoring path is timed side by side on one batch (trials per second ratio).

Run: python benchmarks/fts_server_power.py [--trials 2e6]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]


def speed_ratio(trials: int = 10_000) -> None:
    from attacks.probes import get_probe

    probe = get_probe("fts-server")
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    probe.scores(1, trials, rng)
    reduced = time.perf_counter() - started
    started = time.perf_counter()
    probe._scores_all_agents(1, trials, rng)
    full = time.perf_counter() - started
    print(f"[speed] one process, {trials} trials: two-participant release {trials / reduced:.0f} trials/s, "
          f"all 29 agents {trials / full:.0f} trials/s, ratio {full / reduced:.2f}")


def main() -> None:
    from attacks.attack import run_attack

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=float, default=2e6)
    args = parser.parse_args()
    speed_ratio()
    started = time.perf_counter()
    result = run_attack("fts-server", int(args.trials), seed=2026, executor="processes", workers=2,
                        log=lambda message: print(message, file=sys.stderr))
    elapsed = time.perf_counter() - started
    pld = result.true_epsilon
    bounds = ", ".join(f"{b.method} {b.epsilon:.3f} ({b.epsilon / pld:.2f} of PLD)" for b in result.bounds)
    print(f"[fts-server uniform] {args.trials:.0e} trials/world (+{result.pilot_trials} pilot), 2 processes, "
          f"{result.reduction}: {elapsed:.0f} s; PLD {pld:.3f} at delta {result.delta:.4g}; {bounds}")


if __name__ == "__main__":
    main()
