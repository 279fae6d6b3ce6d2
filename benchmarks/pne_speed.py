"""Speed of Fed-PNE, DP-Fed-PNE and HCT (a script, not a timed test).

Target (issue 4): Fed-PNE with M = 20 clients and T = 10^4 pulls per client in under 2 seconds.
Usage: python benchmarks/pne_speed.py [--repeats 20]

``--end-to-end`` instead times the DP-Fed-PNE end-to-end probe's runs side by side (the previous
implementation one run at a time via ``baseline_checkout``, ``run_dp_fed_pne`` one at a time and
``run_dp_fed_pne_batch``), then the probe itself at 1e5 trials per world (``--probe-trials``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

# benchmarks/accounting.py and attacks.py would shadow the packages while this folder leads sys.path:
# move it to the end (its helper modules stay importable)
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE] + [_HERE]

from dpfed.pne import run_dp_fed_pne, run_fed_pne, run_hct  # noqa: E402

PROBE_RUN = dict(epsilon=1.0, dp_delta=1e-5, calibration="classic", c=0.1, scale_c_for_noise=False)
OLD_RUNS = """
import json, time, numpy as np
from dpfed.pne.algorithm import RewardOverride
from dpfed.pne.private import run_dp_fed_pne
rng = np.random.default_rng(0)
wall, cpu = time.perf_counter(), time.process_time()
for _ in range(RUNS):
    run_dp_fed_pne("garland", 10, 200, seed=rng, reward_override=RewardOverride(0, 3, 1, 1.0), **SETTINGS)
print(json.dumps([(time.perf_counter() - wall) / RUNS, (time.process_time() - cpu) / RUNS]))
"""


def end_to_end(runs: int, probe_trials: int) -> None:
    """Seconds per run of the pne-end-to-end probe's configuration, three ways, then the probe."""
    import numpy as np
    from baseline_checkout import run_at_commit

    from attacks.attack import run_attack
    from attacks.probes import get_probe
    from dpfed.pne.algorithm import RewardOverride
    from dpfed.pne.private import run_dp_fed_pne_batch

    override = RewardOverride(0, 3, 1, 1.0)
    rows = {
        "previous implementation, one at a time": run_at_commit(
            OLD_RUNS.replace("RUNS", str(runs)).replace("SETTINGS", repr(PROBE_RUN))
        )
    }
    rng = np.random.default_rng(0)
    rows["run_dp_fed_pne, one at a time"] = _per_run(
        lambda: [
            run_dp_fed_pne("garland", 10, 200, seed=rng, reward_override=override, **PROBE_RUN) for _ in range(runs)
        ],
        runs,
    )
    rows["run_dp_fed_pne_batch"] = _per_run(
        lambda: run_dp_fed_pne_batch(
            "garland", 10, 200, [rng] * (10 * runs), reward_override=override, record_transcript=False, **PROBE_RUN
        ),
        10 * runs,
    )
    batched = rows["run_dp_fed_pne_batch"][1]
    print(f"{'DP-Fed-PNE garland M=10 T=200 (one core)':42s} {'wall ms':>8s} {'cpu ms':>8s} {'speed-up (cpu)':>14s}")
    for name, (wall, cpu) in rows.items():
        print(f"{name:42s} {1e3 * wall:8.2f} {1e3 * cpu:8.2f} {cpu / batched:13.1f}x")
    start = time.perf_counter()
    result = run_attack(get_probe("pne-end-to-end"), probe_trials, seed=1, executor="processes", workers=2)
    print(
        f"pne-end-to-end probe, {probe_trials} trials per world, processes x2: {time.perf_counter() - start:.0f} s "
        f"wall; CP lower bound {result.best_rigorous():.2f} (claim {result.claim_epsilon:.2f}, {result.status})"
    )


def _per_run(fn, runs: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - wall) / runs, (time.process_time() - cpu) / runs


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
    parser.add_argument("--end-to-end", action="store_true", help="time the end-to-end probe's runs")
    parser.add_argument("--runs", type=int, default=200, help="one-at-a-time runs with --end-to-end")
    parser.add_argument("--probe-trials", type=int, default=100_000)
    args = parser.parse_args()
    if args.end_to_end:
        end_to_end(args.runs, args.probe_trials)
        return
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
