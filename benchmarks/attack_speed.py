"""Attack speed and power measurements (issue 5, "must show" 3-5). Run: python benchmarks/attack_speed.py

1. Gaussian probe (calibrated to epsilon = 2, delta = 1e-5), 10^7 trials per world, estimators included,
   in process (timed after imports are warm; cold start printed too).
2. DP-FTS-DE server probe, 10^5 trials per world, two local worker processes, uniform and reference
   weight schedules: bounds against the tight epsilon (about 10.38 and 6.20).
3. Planted bugs at 10^5 trials per world: VIOLATION for the bugs, PASS for the correct versions.
4. The same seed gives identical scores on the in-process, process and Dask executors.

Options: --quick (10x fewer trials everywhere), --skip-fts.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

# benchmarks/attacks.py would shadow the ``attacks`` package when this directory leads sys.path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]


def _bounds(result) -> str:
    return ", ".join(f"{b.method} {b.epsilon:.3f}" for b in result.bounds)


def gaussian_speed(trials: int) -> None:
    from attacks.attack import run_attack

    started = time.perf_counter()
    run_attack("gaussian", 1000, seed=0)  # warm the imports (scipy.stats etc.)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    result = run_attack("gaussian", trials, seed=1)
    warm = time.perf_counter() - started
    print(
        f"[gaussian] {trials:.0e} trials/world: {warm:.2f} s (imports/warm-up {cold:.2f} s); "
        f"true eps {result.true_epsilon:.3f}; {_bounds(result)}; {result.status}"
    )


def fts_speed(trials: int) -> None:
    from attacks.attack import run_attack

    for name in ("fts-server", "fts-server-reference"):
        started = time.perf_counter()
        result = run_attack(name, trials, seed=2026, executor="processes", workers=2)
        elapsed = time.perf_counter() - started
        print(
            f"[{name}] {trials:.0e} trials/world, 2 processes: {elapsed:.1f} s; tight eps "
            f"{result.true_epsilon:.3f} at delta {result.delta:.4g}; {_bounds(result)}; {result.status}"
        )


def planted_bugs(trials: int) -> None:
    from attacks.attack import run_attack

    for name in (
        "bug-weak-noise",
        "gaussian",
        "bug-no-clip",
        "subsampled-gaussian",
        "bug-uniform-fallback",
        "empty-sample",
        "pne-unclipped-canary",
        "pne-reward",
    ):
        result = run_attack(name, trials, seed=7)
        print(f"[{name}] claim eps {result.claim_epsilon:.3f}: {result.status}; {_bounds(result)}")


def executors_agree(trials: int) -> None:
    from distributed import LocalCluster

    from attacks.attack import collect_scores
    from attacks.probes import get_probe

    probe = get_probe("fts-server", rounds=10)
    probe.batch_size = max(1, trials // 8)
    reference = collect_scores(probe, trials, 99)
    runs = {"processes x2": collect_scores(probe, trials, 99, executor="processes", workers=2)}
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        runs["dask x2"] = collect_scores(probe, trials, 99, executor="dask", scheduler=cluster.scheduler_address)
    for name, (out, inn, _) in runs.items():
        same = np.array_equal(out, reference[0]) and np.array_equal(inn, reference[1])
        print(f"[executors] {name} identical to in-process: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-fts", action="store_true")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    gaussian_speed(10**7 // scale)
    if not args.skip_fts:
        fts_speed(10**5 // scale)
    planted_bugs(10**5 // scale)
    executors_agree(20_000 // scale)


if __name__ == "__main__":
    main()
