"""FKM and DP-FKM regret study (notes C.3, C.5), with standard errors over independent runs.

* slope of log E[Regret_T] against log T for T = 10^2 .. 10^5 (three decades), for linear and quadratic
  losses at d = 2 and 5 (and two spreads), next to the corrected bound 2 sqrt(6) sqrt(nBDG) T^(3/4);
* DP-FKM (event level): measured regret ratio DP / non-DP at T = 10^4 for sigma = 0.25 .. 2 (same losses
  and directions), next to the factor (1 + 4 sigma^2)^(1/4) by which the bound grows.

Usage: python benchmarks/fkm_regret.py [--runs 16] [--quick]; writes benchmarks/fkm_regret_results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

# benchmarks/accounting.py would shadow the ``accounting`` package when this directory leads sys.path
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import numpy as np  # noqa: E402

from accounting.mechanisms import Gaussian  # noqa: E402
from dpfed.fkm import FKMConfig, run_dp_fkm, run_fkm  # noqa: E402

HERE = Path(__file__).resolve().parent
HORIZONS = (100, 300, 1_000, 3_000, 10_000, 30_000, 100_000)
PROBLEMS = [
    ("linear", 5, 0.5),
    ("linear", 2, 0.5),
    ("linear", 5, 2.0),
    ("quadratic", 5, 0.5),
    ("quadratic", 2, 0.5),
    ("quadratic", 5, 2.0),
]
SIGMAS = (0.25, 0.5, 1.0, 2.0)


def slope_study(runs: int, horizons) -> list[dict]:
    rows = []
    print(
        f"{'loss':10s} {'d':>2s} {'spread':>6s}  "
        + "  ".join(f"T={t:<8d}" for t in horizons)
        + "  slope  max regret/bound"
    )
    for loss, dim, spread in PROBLEMS:
        means, ses, ratios = [], [], []
        for horizon in horizons:
            run = run_fkm(
                FKMConfig(dim=dim, horizon=horizon, loss=loss, spread=spread),
                seed=horizon,
                runs=runs,
                record_transcript=False,
            )
            final = run.final_regret
            means.append(final.mean())
            ses.append(final.std(ddof=1) / np.sqrt(runs))
            ratios.append(final.mean() / run.bound)
        slope = float(np.polyfit(np.log(horizons), np.log(means), 1)[0])
        print(
            f"{loss:10s} {dim:2d} {spread:6.1f}  "
            + "  ".join(f"{m:8.1f}+-{s:<4.0f}" for m, s in zip(means, ses, strict=True))
            + f"  {slope:.3f}  {max(ratios):.3f}"
        )
        rows.append(
            {
                "loss": loss,
                "dim": dim,
                "spread": spread,
                "horizons": list(horizons),
                "mean": means,
                "se": ses,
                "slope": slope,
                "regret_over_bound": ratios,
            }
        )
    return rows


def dp_factor_study(runs: int, horizon: int) -> list[dict]:
    config = FKMConfig(dim=5, horizon=horizon)
    public = run_fkm(config, seed=1, runs=runs, record_transcript=False)
    base, base_se = public.final_regret.mean(), public.final_regret.std(ddof=1) / np.sqrt(runs)
    print(f"\nDP-FKM event level, linear losses, d = 5, T = {horizon}: non-private regret {base:.1f} +- {base_se:.1f}")
    print("sigma  DP regret        measured ratio     (1+4 sigma^2)^(1/4)  bound ratio  DP regret/bound")
    rows = []
    for sigma in SIGMAS:
        private = run_dp_fkm(config, seed=1, mechanism=Gaussian(sigma, 2.0), runs=runs, record_transcript=False)
        final = private.final_regret
        ratio = final.mean() / base
        ratio_se = ratio * np.hypot(final.std(ddof=1) / np.sqrt(runs) / final.mean(), base_se / base)
        factor = (1 + 4 * sigma**2) ** 0.25
        print(
            f"{sigma:5.2f}  {final.mean():8.1f} +- {final.std(ddof=1) / np.sqrt(runs):5.1f}  {ratio:6.3f} +- "
            f"{ratio_se:5.3f}     {factor:6.3f}               {private.bound / public.bound:6.3f}       "
            f"{final.mean() / private.bound:.3f}"
        )
        rows.append(
            {
                "sigma": sigma,
                "regret": float(final.mean()),
                "ratio": float(ratio),
                "ratio_se": float(ratio_se),
                "factor": factor,
                "regret_over_bound": final.mean() / private.bound,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="T up to 10^4 only")
    args = parser.parse_args()
    started = time.perf_counter()
    horizons = HORIZONS[:5] if args.quick else HORIZONS
    results = {"slopes": slope_study(args.runs, horizons), "dp_factor": dp_factor_study(args.runs, 10_000)}
    (HERE / "fkm_regret_results.json").write_text(json.dumps(results, indent=1))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
