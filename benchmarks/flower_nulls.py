"""Null audits of the Flower canary bounds on real Flower runs: canaries connected but never inserted.

Each run is the example app project on Flower's simulation engine with ``k`` canary SuperNodes, sampled like
every other client but send an update of norm C in an independent direction (``insert_canaries=False``),
so their own directions never enter a release. (A zero update would crash Flower's clipping, which divides
by the update's norm.) Their random secret signs are scored exactly as an audit scores inserted canaries
(the ``flower-app`` probe: ``attacks.probes.flower_bounds.canary_scores`` and ``canary_bounds``): both threat
models with both one-run estimators, and the measured-shift bound over the rounds each canary took part
in. Every positive bound is a false positive; at 95% confidence each estimator may be positive in at most
5% of the runs in expectation. Prints one line per run and the counts; ``--json`` writes the numbers.

    PYTHONPATH=$PWD python benchmarks/flower_nulls.py [--runs 10] [--first-seed 0] [--canaries 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import numpy as np  # noqa: E402

from attacks.probes import get_probe  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dpfed", "flower", "example_app")


def null_run(seed: int, args) -> dict:
    """One Flower run whose canary clients take part but never insert their directions."""
    run_config = {"clients-per-round": args.sampled, "num-server-rounds": args.rounds,
                  "noise-multiplier": args.noise_multiplier, "hidden": args.hidden, "seed": seed}
    probe = get_probe("flower-app", app=EXAMPLE, run_config=run_config, num_supernodes=args.nodes,
                      insert_canaries=False)
    started = time.perf_counter()
    outcome = probe.run_once(args.canaries, seed, 1e9, args.delta, args.confidence)
    seconds = time.perf_counter() - started
    scored, bounds = outcome.details["canaries"], outcome.bounds
    estimates = {m: scored[m]["estimate"]["epsilon"] for m in ("final_model", "all_iterates")}
    estimates["measured_shift"] = scored["measured_shift"]["estimate"]["epsilon"]
    return {"seed": seed, "seconds": seconds, "bounds": bounds, "estimates": estimates,
            "shift": scored["measured_shift"]["shift"], "participations": scored["measured_shift"]["participations"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0, help="seed of the first run (then one more a run)")
    parser.add_argument("--canaries", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--sampled", type=int, default=44, help="clients per round, canaries included (default 44)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--noise-multiplier", type=float, default=1.0)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    runs = []
    for seed in range(args.first_seed, args.first_seed + args.runs):
        run = null_run(seed, args)
        runs.append(run)
        shown = ", ".join(f"{b['threat_model']}/{b['method']} {b['epsilon']:.3g}" for b in run["bounds"])
        estimates = " / ".join(f"{v:.3g}" for v in run["estimates"].values())
        print(f"run {seed}: {run['seconds']:.1f} s; bounds {shown}; estimates {estimates}; measured shift "
              f"{run['shift']:.3g} over {run['participations']} canary-rounds", flush=True)
    methods = sorted({b["method"] for r in runs for b in r["bounds"]})
    counts = {m: int(sum(any(b["epsilon"] > 0 for b in r["bounds"] if b["method"] == m) for r in runs))
              for m in methods}
    largest = {m: float(max(b["epsilon"] for r in runs for b in r["bounds"] if b["method"] == m)) for m in methods}
    print(f"{args.runs} null runs, {args.canaries} never-inserted canaries each: runs with a positive bound "
          f"(per method, best over threat models at {args.confidence:.0%} overall) {counts}; largest {largest}; "
          f"nominal rate {1 - args.confidence:.0%}; median run {np.median([r['seconds'] for r in runs]):.1f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"args": vars(args), "runs": runs, "positive_runs": counts, "largest": largest}, handle,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
