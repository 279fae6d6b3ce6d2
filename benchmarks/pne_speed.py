"""Speed of Fed-PNE, DP-Fed-PNE and HCT (a script, not a timed test).

Target (issue 4): Fed-PNE with M = 20 clients and T = 10^4 pulls per client in under 2 seconds.
Usage: python benchmarks/pne_speed.py [--repeats 20]
"""

from __future__ import annotations

import argparse
import statistics
import time

from dpfed.pne import run_dp_fed_pne, run_fed_pne, run_hct


def best_and_median(fn, repeats: int) -> tuple[float, float]:
    times = []
    for r in range(repeats):
        start = time.perf_counter()
        fn(r)
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    cases = [
        ("fed-pne garland M=20 T=1e4", lambda s: run_fed_pne("garland", 20, 10_000, seed=s)),
        ("dp-fed-pne garland M=20 T=1e4 eps=1", lambda s: run_dp_fed_pne("garland", 20, 10_000, seed=s)),
        ("fed-pne himmelblau M=20 T=1e4", lambda s: run_fed_pne("himmelblau", 20, 10_000, seed=s)),
        ("fed-pne garland M=50 T=1e5", lambda s: run_fed_pne("garland", 50, 100_000, seed=s)),
        ("hct garland T=1e4 (centralised)", lambda s: run_hct("garland", 10_000, seed=s)),
    ]
    print(f"{'case':40s}  {'best s':>8s}  {'median s':>8s}")
    for name, fn in cases:
        repeats = args.repeats if "hct" not in name else max(3, args.repeats // 5)
        best, median = best_and_median(fn, repeats)
        print(f"{name:40s}  {best:8.4f}  {median:8.4f}")
    print("target: fed-pne M=20 T=1e4 under 2 s")


if __name__ == "__main__":
    main()
