"""FedZero and DP-FedZero regret study (notes B.3-B.5); the seed has no experiments, so this follows the
protocol the notes suggest (B.4): fixed eta and h of Corollary 4.2, random contexts, m = 1..16, upper
quantiles of the regret over many seeds.

* regret against the bracket of Theorem 4.1 (C = 1) at the two geometries (l2: ball + Euclidean
  regulariser, ||x - c||_2 losses; l1: simplex + entropy, ||x - c||_1 losses): mean, 95% and 99%
  quantiles over ``--runs`` runs; the ratio q99 / bracket is the empirical universal constant C;
  the explicit-constant bound of Appendix D is printed too;
* DP-FedZero worker level, scalar against vector noise (B.5): measured noise energy E||g_noise||^2 and
  regret for m = 2..40 workers at d = 10 (q = 1, sigma = 1, C = 1), each with the step tuned to its own
  second moment, eta = R / sqrt(n (L^2 d_1 + energy)).

Usage: python benchmarks/fedzero_regret.py [--runs 200] [--rounds 10000]; writes
benchmarks/fedzero_regret_results.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path

# benchmarks/accounting.py would shadow the ``accounting`` package when this directory leads sys.path
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import numpy as np  # noqa: E402

from dpfed.fedzero import FedZeroConfig, dp_uplink, explicit_bound, run_fedzero, theorem_bound  # noqa: E402
from dpfed.fedzero.geometry import sample_directions  # noqa: E402

HERE = Path(__file__).resolve().parent
WORKERS = (1, 2, 4, 8, 16)
DP_WORKERS = (2, 5, 10, 20, 40)


def bound_study(runs: int, rounds: int, dim: int) -> list[dict]:
    rows = []
    print(f"d = {dim}, n = {rounds}, {runs} runs per row; regret = sum_t f(x_t) - min f")
    print("geometry  m   mean      q95       q99       bracket(C=1)  q99/bracket  explicit bound")
    for geometry in ("l2", "l1"):
        for m in WORKERS:
            config = FedZeroConfig(dim=dim, workers=m, rounds=rounds, geometry=geometry)
            final = run_fedzero(config, seed=m, runs=runs, record_transcript=False).final_regret
            q95, q99 = np.quantile(final, [0.95, 0.99])
            bracket, explicit = theorem_bound(config), explicit_bound(config)
            print(
                f"{geometry:8s} {m:2d}  {final.mean():8.2f}  {q95:8.2f}  {q99:8.2f}  {bracket:10.1f}    "
                f"{q99 / bracket:.4f}       {explicit:.2e}"
            )
            rows.append(
                {
                    "geometry": geometry,
                    "workers": m,
                    "mean": float(final.mean()),
                    "q95": float(q95),
                    "q99": float(q99),
                    "bracket": bracket,
                    "empirical_C": float(q99 / bracket),
                    "explicit_bound": explicit,
                }
            )
    return rows


def noise_energy(config: FedZeroConfig, noise: str, draws: int = 20_000) -> float:
    """E||g||^2 of the noise alone (all scalars zero), measured through the uplink."""
    uplink = dp_uplink(config, "worker", noise, 1.0, 1.0, 1.0)
    rng = np.random.default_rng(0)
    _, weights = sample_directions(rng, (draws, config.workers), config.dim, config.randomisation)
    zeros = np.zeros((draws, config.workers, 1))
    g = uplink.aggregate(1, zeros, zeros, weights, rng, None, "scalar")
    return float(np.mean(np.sum(g**2, axis=1)))


def scalar_vector_study(runs: int, rounds: int, dim: int) -> list[dict]:
    print(f"\nDP-FedZero worker level, l2 geometry, d = {dim}, n = {rounds}, q = 1, sigma = 1, C = 1, {runs} runs")
    print(
        "m   energy scalar (d^3/m)   energy vector (d^4/m^2)   regret scalar      regret vector      "
        "vector/scalar regret"
    )
    rows = []
    for m in DP_WORKERS:
        base = FedZeroConfig(dim=dim, workers=m, rounds=rounds, geometry="l2")
        row = {"workers": m}
        for noise in ("scalar", "vector"):
            energy = noise_energy(base, noise)
            step = base.space.R / math.sqrt(rounds * (base.d1 + energy))
            config = dataclasses.replace(base, step=step)
            uplink = dp_uplink(config, "worker", noise, 1.0, 1.0, 1.0)
            final = run_fedzero(config, seed=m, uplink=uplink, runs=runs, record_transcript=False).final_regret
            row[noise] = {
                "energy": energy,
                "regret": float(final.mean()),
                "se": float(final.std(ddof=1) / math.sqrt(runs)),
                "step": step,
            }
        s, v = row["scalar"], row["vector"]
        print(
            f"{m:2d}  {s['energy']:9.0f} ({dim**3 / m:7.0f})   {v['energy']:10.0f} ({dim**4 / m**2:8.0f})      "
            f"{s['regret']:7.1f} +- {s['se']:5.1f}   {v['regret']:7.1f} +- {v['se']:5.1f}   "
            f"{v['regret'] / s['regret']:.3f}"
        )
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=10)
    args = parser.parse_args()
    started = time.perf_counter()
    results = {
        "bounds": bound_study(args.runs, args.rounds, args.dim),
        "scalar_vs_vector": scalar_vector_study(max(10, args.runs // 10), args.rounds, args.dim),
    }
    (HERE / "fedzero_regret_results.json").write_text(json.dumps(results, indent=1))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
