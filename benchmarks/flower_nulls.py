"""Null audits of the Flower canary bounds on real Flower runs: canaries never inserted.

Each run is the example app on Flower's simulation engine with no canary clients; afterwards ``k``
canary directions that never took part get random secret signs and are scored against the run's final
model delta and its all-iterates direction, exactly as an audit scores inserted canaries
(``dpfed.flower.audit.canary_scores``, ``reports.audit.flower_canaries.canary_bounds``). Every positive
bound is a false positive; at 95% confidence each estimator may be positive in at most 5% of the runs in
expectation. Prints one line per run and the counts; ``--json`` writes the numbers.

    PYTHONPATH=$PWD python benchmarks/flower_nulls.py [--runs 10] [--canaries 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import numpy as np  # noqa: E402

from dpfed.flower.audit import canary_scores  # noqa: E402
from dpfed.flower.example_app import AppSettings  # noqa: E402
from dpfed.flower.run import run_example  # noqa: E402
from reports.audit.flower_canaries import canary_bounds  # noqa: E402


def null_run(seed: int, canaries: int, args) -> dict:
    """One Flower run without canaries, scored with ``canaries`` never-inserted directions."""
    import dataclasses

    settings = AppSettings(nodes=args.nodes, sampled=args.nodes, rounds=args.rounds,
                           noise_multiplier=args.noise_multiplier, hidden=args.hidden, seed=seed)
    started = time.perf_counter()
    result = run_example(settings)
    seconds = time.perf_counter() - started
    # score as if `canaries` canaries had been configured: same directions and signs, none inserted
    scored = canary_scores(dataclasses.replace(settings, canaries=canaries, sampled=args.nodes), result, args.delta)
    bounds = canary_bounds(scored, args.delta, args.confidence)
    return {"seed": seed, "seconds": seconds, "bounds": bounds,
            "estimates": {m: scored[m]["estimate"]["epsilon"] for m in ("final_model", "all_iterates")}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--canaries", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--noise-multiplier", type=float, default=2.5)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    runs = []
    for seed in range(args.runs):
        run = null_run(seed, args.canaries, args)
        runs.append(run)
        shown = ", ".join(f"{b['threat_model']}/{b['method']} {b['epsilon']:.3g}" for b in run["bounds"])
        print(f"run {seed}: {run['seconds']:.1f} s; bounds {shown}; estimates "
              f"{run['estimates']['final_model']:.3g} / {run['estimates']['all_iterates']:.3g}", flush=True)
    methods = sorted({b["method"] for r in runs for b in r["bounds"]})
    counts = {m: int(sum(any(b["epsilon"] > 0 for b in r["bounds"] if b["method"] == m) for r in runs))
              for m in methods}
    largest = {m: float(max(b["epsilon"] for r in runs for b in r["bounds"] if b["method"] == m)) for m in methods}
    print(f"{args.runs} null runs, {args.canaries} never-inserted canaries each: runs with a positive bound "
          f"(best of both threat models, {args.confidence:.0%} overall) {counts}; largest {largest}; "
          f"nominal rate {1 - args.confidence:.0%}; median run {np.median([r['seconds'] for r in runs]):.1f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"args": vars(args), "runs": runs, "positive_runs": counts, "largest": largest}, handle,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
