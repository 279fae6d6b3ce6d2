"""DP-FTS-DE end-to-end runs per second, this checkout against another (e.g. the code before issue 16's GPU
work), numpy and torch backends side by side, alternating in fresh processes on the same machine.

Usage: python benchmarks/fts_backend_compare.py --baseline /path/to/old/checkout [--runs 100,400]
[--repeats 2] [--device cpu]. Each measurement is a subprocess that imports one checkout, makes a warm-up
call, then times one ``run_fts_batch`` call of the probe's configuration (full 60-round runs, canary,
one CPU thread); printed: runs/s per checkout and backend, and the ratios. Numpy is capped at 100 runs
per call (its cost per run is flat beyond ~25).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

MEASURE = """
import sys, time, numpy as np
from attacks.probes import get_probe
from dpfed.fts.algorithm import run_fts_batch
backend, device, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
probe = get_probe("fts-end-to-end")
config, objective = probe._config, probe.objective()
canary = np.zeros(config.num_features); canary[0] = config.per_vector_clip
options = dict(objective=objective, canary_vector=canary, record_uploads=False, backend=backend, device=device)
run_fts_batch(config, list(range(1000, 1008)), **options)
started = time.perf_counter()
run_fts_batch(config, list(range(runs)), **options)
if device.startswith("cuda"):
    import torch; torch.cuda.synchronize()
print(runs / (time.perf_counter() - started))
"""


def measure(checkout: str, backend: str, device: str, runs: int) -> float:
    env = {**os.environ, "PYTHONPATH": checkout}
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, backend, device, str(runs)],
        env=env,
        cwd=checkout,
        capture_output=True,
        text=True,
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the other checkout (its repository root)")
    parser.add_argument("--runs", default="100,400", help="runs per call (torch; numpy at most 100)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print(f"runs/s of full 60-round DP-FTS-DE end-to-end runs; torch on {args.device}; one CPU thread")
    print(
        f"{'runs/call':>9s} {'numpy':>8s} {'torch before':>12s} {'torch now':>10s} "
        f"{'now/before':>10s} {'now/numpy':>9s}"
    )
    for runs in (int(r) for r in args.runs.split(",")):
        rates = {"numpy": [], "before": [], "now": []}
        for _ in range(args.repeats):  # alternate, so that a load change hits all three alike
            rates["numpy"].append(measure(here, "numpy", "cpu", min(runs, 100)))
            rates["before"].append(measure(args.baseline, "torch", args.device, runs))
            rates["now"].append(measure(here, "torch", args.device, runs))
        best = {k: max(v) for k, v in rates.items()}
        print(
            f"{runs:9d} {best['numpy']:8.1f} {best['before']:12.1f} {best['now']:10.1f} "
            f"{best['now'] / best['before']:9.2f}x {best['now'] / best['numpy']:8.2f}x"
        )


if __name__ == "__main__":
    main()
