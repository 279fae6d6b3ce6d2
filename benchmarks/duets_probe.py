"""DP-DUETS probes at 1e5 trials per world (issue 12, must-show 4): the end-to-end probes with
shared-randomness replay (agent and reward level) against the tight epsilon of their releases, and the
non-private DUETS against the trial ceiling. Prints each estimator's bound, the ratio to the tight
epsilon and the wall time. Usage: python -P benchmarks/duets_probe.py [--trials 100000]
"""

from __future__ import annotations

import argparse
import math
import time

from attacks.attack import run_attack
from attacks.planner import bonferroni_ceiling
from attacks.probes import get_probe

PROBES = {
    "dp-duets-end-to-end": {},
    "dp-duets-end-to-end-reward": {},
    "duets-end-to-end": {},
    "dp-duets-release": {"noise_multiplier": 1.0},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--delta", type=float, default=1e-5)
    args = parser.parse_args()
    print(
        f"{args.trials} trials per world, delta {args.delta:g}; CP ceiling "
        f"{bonferroni_ceiling(args.trials, args.delta):.3f}"
    )
    for name, params in PROBES.items():
        probe = get_probe(name, **params)
        start = time.perf_counter()
        tight_eps = probe.true_epsilon(args.delta)  # inf for the non-private probe
        claim = None if tight_eps is not None and math.isfinite(tight_eps) else 8.0
        result = run_attack(probe, args.trials, seed=2026, delta=args.delta, claim_epsilon=claim)
        elapsed = time.perf_counter() - start
        tight = result.true_epsilon
        bounds = {b.method: b.epsilon for b in result.bounds}
        ratios = {k: (v / tight if tight and math.isfinite(tight) else None) for k, v in bounds.items()}
        print(
            f"{name:28s} tight {tight if tight is None else round(tight, 3)}  "
            + "  ".join(f"{k} {v:.3f}" + (f" ({ratios[k]:.2f})" if ratios[k] else "") for k, v in bounds.items())
            + f"  {elapsed:.1f} s  verdict {result.status}"
        )


if __name__ == "__main__":
    main()
