"""Audits of FedZero/FKM and their private variants (ours) at 1e5 trials per world (notes B.5, C.5, D).

For each private variant the end-to-end probe with shared-randomness replay (both worlds replay the
public randomness; only the mechanism noise differs) against the tight epsilon of its release: the
rigorous Clopper-Pearson bound and the GDP route (model-based; exact when the statistic is Gaussian,
i.e. for the un-subsampled variants), each as a fraction of the tight epsilon. For the non-private
versions the bound next to the estimator's trial ceiling. Also the mechanism-level probes.

Usage: python benchmarks/fedzero_fkm_audit.py [--trials 100000]; writes benchmarks/fedzero_fkm_audit_results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

# benchmarks/attacks.py would shadow the ``attacks`` package when this directory leads sys.path
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

from attacks.attack import run_attack  # noqa: E402
from attacks.planner import bonferroni_ceiling  # noqa: E402
from attacks.probes import get_probe  # noqa: E402

HERE = Path(__file__).resolve().parent
DELTA = 1e-5
PRIVATE = [
    ("DP-FKM event level (end to end)", "fkm-end-to-end"),
    ("DP-FKM dataset level (end to end)", "fkm-dataset-end-to-end"),
    ("DP-FedZero worker level, server view (end to end)", "fedzero-end-to-end"),
    ("DP-FedZero worker level, broadcast view (end to end)", "fedzero-broadcast"),
    ("DP-FedZero record level (end to end)", "fedzero-record"),
    ("DP-FKM event level (mechanism level)", "fkm-loss"),
    ("DP-FedZero worker level (mechanism level)", "fedzero-scalar"),
]
NON_PRIVATE = [
    ("FKM (end to end)", "fkm-nonprivate"),
    ("FedZero, server view (end to end)", "fedzero-nonprivate"),
    ("FedZero, broadcast view (end to end)", "fedzero-broadcast-leak"),
]


def bounds_of(result) -> dict:
    return {b.method: b.epsilon for b in result.bounds}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rows = []
    print(f"{args.trials} trials per world, delta = {DELTA}")
    print(f"{'variant':55s} {'tight eps':>9s} {'CP':>7s} {'CP/tight':>8s} {'GDP':>7s} {'GDP/tight':>9s} {'s':>5s}")
    for label, name in PRIVATE:
        started = time.perf_counter()
        result = run_attack(get_probe(name), trials=args.trials, seed=args.seed, delta=DELTA)
        b, tight = bounds_of(result), result.true_epsilon
        print(
            f"{label:55s} {tight:9.3f} {b['clopper-pearson']:7.3f} {b['clopper-pearson'] / tight:8.3f} "
            f"{b['gdp']:7.3f} {b['gdp'] / tight:9.3f} {time.perf_counter() - started:5.1f}"
        )
        rows.append(
            {
                "variant": label,
                "probe": name,
                "tight_epsilon": tight,
                "bounds": b,
                "verdict": result.status,
                "seconds": time.perf_counter() - started,
            }
        )
    ceiling = bonferroni_ceiling(args.trials, DELTA)
    print(f"\nnon-private versions (ceiling of the Clopper-Pearson estimator at this budget: {ceiling:.3f})")
    for label, name in NON_PRIVATE:
        result = run_attack(get_probe(name), trials=args.trials, seed=args.seed, delta=DELTA)
        cp = bounds_of(result)["clopper-pearson"]
        print(f"{label:55s} CP {cp:.3f}  reaches the ceiling: {abs(cp - ceiling) < 1e-9}")
        rows.append({"variant": label, "probe": name, "bounds": bounds_of(result), "ceiling": ceiling})
    (HERE / "fedzero_fkm_audit_results.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
