"""Algorithm-level planted bugs against the end-to-end probes at the default audit's budgets.

For every ``bug-*`` end-to-end probe and its correct twin (the same probe with ``planted_bug="none"``)
prints the claim (the correct mechanism's tight epsilon), the rigorous Clopper-Pearson lower bound,
the verdict, the trials per world and the wall time. Budgets: DP-FTS-DE 2000 trials per world over
full 60-round runs, DP-Fed-PNE 10000 (``reports/defaults/default_audit.toml``).

Usage: python benchmarks/planted_bugs.py [--executor processes --workers 2] [--only fts|pne]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# benchmarks/attacks.py would shadow the ``attacks`` package when this directory leads sys.path
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

from attacks.attack import run_attack  # noqa: E402
from attacks.probes import get_probe  # noqa: E402

BUDGETS = {"fts": 2000, "pne": 10000}
BUGS = [
    "bug-fts-renormalise-sampled",
    "bug-fts-unnoised-final-aggregate",
    "bug-pne-unnoised-final-upload",
    "bug-pne-noise-shared-across-nodes",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--executor", default="processes")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", choices=["fts", "pne"])
    args = parser.parse_args()
    print(f"{'probe':38s} {'bug':5s} {'trials':>7s} {'claim':>6s} {'CP lower':>8s} {'verdict':>10s} {'wall s':>7s}")
    for name in BUGS:
        family = name.split("-")[1]
        if args.only and family != args.only:
            continue
        for planted in (True, False):
            probe = get_probe(name) if planted else get_probe(name, planted_bug="none")
            start = time.perf_counter()
            result = run_attack(probe, BUDGETS[family], seed=2026, executor=args.executor, workers=args.workers)
            wall = time.perf_counter() - start
            print(
                f"{name:38s} {'yes' if planted else 'no':5s} {BUDGETS[family]:7d} {result.claim_epsilon:6.2f} "
                f"{result.best_rigorous():8.2f} {result.status:>10s} {wall:7.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
