"""False alarms and power of the Flower transcript checks over seeds: correct apps and planted bugs.

Runs the outside-style app of ``tests/flower/planted_apps.py`` (its own 30-16-2 MLP on scikit-learn's breast
cancer set, FedAvg under Flower 1.42's DP wrappers) for ``--seeds`` seeds per configuration, records each run
with ``dpfed.flower.recorder`` and checks it with ``attacks.flower_checks.transcript_check`` at ``--alpha``; prints, per
configuration, how many runs raised a CRITICAL finding of each code. For a correct app every statistical check
kind may fire in at most ``alpha`` of the runs (five kinds: at most 5 alpha of the runs in all); the
deterministic ones never (except ``adaptive-noise-below-clip``, a true finding about Flower's adaptive wrappers:
see BENCHMARKS.md). ``--json`` also writes each run's CRITICAL codes, per configuration and seed
(``benchmarks/flower_check_nulls_results.json``), which ``tests/flower/test_documented_figures.py`` compares with a
fresh in-process run of a few seeds. ``--runtime inprocess`` (default) drives Flower's strategies and ClientApps
through the in-process grid of ``tests/flower/inprocess_grid.py`` (about 1 s a run); ``simulation`` runs Flower's
simulation engine (Ray; 20-70 s a run).

    PYTHONPATH=$PWD python benchmarks/flower_check_nulls.py [--seeds 30] [--runtime inprocess] [--planted] \
        [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections import Counter

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
sys.path.insert(0, os.getcwd())

from attacks.flower_checks.transcript_check import assumptions_from_config, check_transcript  # noqa: E402

CORRECT = {
    "server-fixed": dict(kind="server-fixed"),
    "client-fixed": dict(kind="client-fixed"),
    "server-adaptive (initial clip 2: rises)": dict(kind="server-adaptive", initial_clip=2.0, sampled=10),
    "server-adaptive (initial clip 0.1, Flower's default: falls)": dict(kind="server-adaptive", initial_clip=0.1,
                                                                        sampled=10),
}
PLANTED = {
    "a clip-missing (client-fixed, nodes 0-1 unclipped)": dict(kind="client-fixed", bug="clip-missing"),
    "b same-noise (re-seeded noise)": dict(bug="same-noise"),
    "c bias-unnoised (2 of 530 numbers)": dict(bug="bias-unnoised"),
    "d same-clients (re-seeded sampler)": dict(bug="same-clients"),
    "noise-cut (half the noise)": dict(bug="noise-cut"),
}


def run_simulation_once(cfg: dict) -> dict:
    """The app's ServerApp and ClientApp on Flower's simulation engine, the strategy wrapped in our recorder."""
    from flwr.simulation import run_simulation

    from dpfed.flower.read import config_from_strategy
    from dpfed.flower.recorder import recording_strategy
    from tests.flower import planted_apps as app

    os.environ.setdefault("RAY_worker_niceness", "0")
    result = {}
    run_simulation(server_app=app.server_app(cfg, wrap=recording_strategy, result=result),
                   client_app=app.make_client_app(cfg), num_supernodes=cfg["nodes"],
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                   "init_args": {"num_cpus": 2, "include_dashboard": False}})
    config, _ = config_from_strategy(result["strategy"], nodes=cfg["nodes"], rounds=cfg["rounds"], weighting="equal")
    return {"transcript": result["strategy"].transcript, "config": config}


def one_run(cfg: dict, runtime: str, alpha: float, delta: float) -> list:
    if runtime == "simulation":
        out = run_simulation_once(cfg)
    else:
        from tests.flower.inprocess_grid import run_in_process

        out = run_in_process(cfg)
    return check_transcript(out["transcript"], assumptions_from_config(out["config"], delta), alpha)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--alpha", type=float, default=1e-3)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--runtime", choices=("inprocess", "simulation"), default="inprocess")
    parser.add_argument("--planted", action="store_true", help="also count the planted bugs' findings (power)")
    parser.add_argument("--json", default=None, help="write each run's CRITICAL codes (configuration -> seed -> codes)")
    args = parser.parse_args(argv)
    logging.getLogger("flwr").setLevel(logging.WARNING)
    from tests.flower.planted_apps import settings

    groups = {"correct": CORRECT, **({"planted": PLANTED} if args.planted else {})}
    per_seed = {}
    for group, configs in groups.items():
        for name, base in configs.items():
            started, runs, codes, any_critical = time.perf_counter(), 0, Counter(), 0
            seen = per_seed[f"[{group}] {name}"] = {"settings": base, "critical_codes": {}}
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                findings = one_run(settings(**base, rounds=args.rounds, seed=seed), args.runtime, args.alpha,
                                   args.delta)
                critical = {f.code for f in findings if f.severity == "critical"}
                seen["critical_codes"][str(seed)] = sorted(critical)
                codes.update(critical)
                any_critical += bool(critical)
                runs += 1
            per_run = (time.perf_counter() - started) / runs
            shown = ", ".join(f"{c} {n}" for c, n in sorted(codes.items())) or "none"
            print(f"[{group}] {name}: {any_critical}/{runs} runs with a CRITICAL finding; runs per code: {shown} "
                  f"({per_run:.1f} s a run)", flush=True)
            odd = [s for s, c in seen["critical_codes"].items() if bool(c) != (any_critical > runs / 2)]
            print(f"    seeds {'without' if any_critical > runs / 2 else 'with'} a CRITICAL finding: "
                  f"{', '.join(odd) or 'none'}", flush=True)
    print(f"alpha {args.alpha:g} per check kind (5 statistical kinds: at most {5 * args.alpha:g} of correct runs "
          f"in expectation); {args.rounds} rounds, 20 nodes, 5 sampled (adaptive: 10), z = 1, C = 0.5; runtime "
          f"{args.runtime}; seeds {args.first_seed}..{args.first_seed + args.seeds - 1}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"args": vars(args), "runs": per_seed}, handle, indent=1)
            handle.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
