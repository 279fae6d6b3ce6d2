"""Utility studies of the FTS family (results go to the report / BENCHMARKS.md).

1. Synthetic preset, low heterogeneity (h = 0.1): TS vs FTS vs FTS-DE vs DP-FTS-DE (z = 1), simple regret
   averaged over R runs with standard errors (run = new functions, new seed); plus the ablations of the
   notes (5.6): TS with a uniform random query with probability 1 - p_t, and the same with the DE
   sub-region initial design.
2. DP-FTS-DE on the synthetic preset as z grows (q = 0.35), including z far below the seed's grid: with
   N = 29 and M = 100 the per-coordinate noise z * max varphi * S / q swamps the signal already at z ~ 0.1.
3. The same comparison on the svm-breast-cancer preset (1 - AUC), reported whatever it shows.
4. Privacy-utility scatter over the seed's (q, z) grid (q = 0.35 with z in {1, 1.6, 2, 3, 4}; z = 1 with
   q in {0.10, 0.15, 0.20, 0.25}) on the synthetic preset, epsilon from the ``moments`` and ``pld``
   accountants at the preset's T and delta = 29^-1.1 -> benchmarks/fts_privacy_utility.png.
Usage: python benchmarks/fts_utility.py [--runs 10] [--svm-runs 10]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from accounting.registry import account_all
from dpfed.fts import FTSConfig, run_fts
from dpfed.objectives import make_objective

HERE = Path(__file__).resolve().parent
# the seed's grid (notes 4.4), preceded by small multipliers that show where the broadcast carries signal
Z_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 1.6, 2.0, 3.0, 4.0)
Q_GRID = (0.10, 0.15, 0.20, 0.25)


def curves(cfg: FTSConfig, runs: int, objective=None) -> np.ndarray:
    return np.array([run_fts(cfg, np.random.default_rng([2026, r]), objective=objective).utility for r in range(runs)])


def summary(u: np.ndarray, rounds) -> dict:
    se = u.std(axis=0, ddof=1) / np.sqrt(len(u))
    return {int(t): (float(u[:, t].mean()), float(se[t])) for t in rounds}


def show(label: str, s: dict) -> None:
    print(f"  {label:<22}" + "  ".join(f"t={t}: {m:.4f}±{e:.4f}" for t, (m, e) in s.items()))


def epsilons(cfg: FTSConfig) -> dict:
    comp = run_fts(cfg.replace(rounds=1), 0).composition()
    comp = type(comp).of(comp.parts[0][0], cfg.rounds)
    # PLD is skipped for z < 0.3: its discretisation takes minutes and GBs there (z = 0.01 did not finish)
    names = ["moments", "pld"] if cfg.noise_multiplier >= 0.3 else ["moments"]
    eps = {a.name: a.epsilon for a in account_all(comp, cfg.dp_delta, names)}
    return {"moments": eps["moments"], "pld": eps.get("pld")}


def fmt(value) -> str:
    return "-" if value is None else f"{value:.4g}"


def comparison(preset: str, runs: int, results: dict, shared_objective: bool, ablations: bool = True) -> None:
    base = FTSConfig.from_preset(preset)
    objective = make_objective(base, 0) if shared_objective else None
    rounds = sorted({0, 1, 5, 10, base.rounds // 2, base.rounds})
    print(f"\n[{preset}] {base.objective}, {runs} runs, mean ± standard error (lower is better)")
    variants = {a: dict(algorithm=a) for a in ("ts", "fts", "fts-de", "dp-fts-de")}
    if ablations:  # the ablations of notes 5.6
        variants["ts+uniform"] = dict(algorithm="ts", explore_uniform=True)
        variants["ts+subregion+uniform"] = dict(algorithm="ts", explore_uniform=True, init="subregion")
    for alg, changes in variants.items():
        u = curves(base.replace(**changes), runs, objective)
        s = summary(u, rounds)
        results[f"{preset}/{alg}"] = s
        area = u[:, 1:].mean(axis=1)
        results[f"{preset}/{alg}/mean_regret"] = (float(area.mean()), float(area.std(ddof=1) / np.sqrt(runs)))
        show(alg + (" (z=1)" if alg.startswith("dp") else ""), s)
        print(f"  {'':<22}mean over iterations 1..T: {area.mean():.4f}±{area.std(ddof=1) / np.sqrt(runs):.4f}")
    final = {k: v[base.rounds] for k, v in results.items() if k.startswith(preset + "/") and k.count("/") == 1}
    ts_m, ts_e = final[f"{preset}/ts"]
    de_m, de_e = final[f"{preset}/fts-de"]
    print(f"  final FTS-DE - TS = {de_m - ts_m:+.4f} (combined SE {np.hypot(ts_e, de_e):.4f})")


def main() -> None:
    parser = argparse.ArgumentParser(description="FTS-family utility studies")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--svm-runs", type=int, default=10)
    args = parser.parse_args()
    start = time.perf_counter()
    results: dict = {}
    comparison("synthetic", args.runs, results, shared_objective=False)

    base = FTSConfig.from_preset("synthetic")
    print(
        f"\n[synthetic] DP-FTS-DE over the seed's (q, z) grid, {args.runs} runs: mean simple regret over "
        f"iterations 1..T and simple regret at t = 5, 10, T"
    )
    scatter = []
    for q, z in [(0.35, z) for z in Z_GRID] + [(q, 1.0) for q in Q_GRID]:
        cfg = base.replace(rate=q, noise_multiplier=z)
        u = curves(cfg, args.runs)
        s = summary(u, [5, 10, base.rounds])
        area = u[:, 1:].mean(axis=1)  # mean simple regret over iterations 1..T
        m, e = float(area.mean()), float(area.std(ddof=1) / np.sqrt(len(area)))
        eps = epsilons(cfg)
        scatter.append({"q": q, "z": z, "regret": m, "se": e, "at": s, **{f"eps_{k}": v for k, v in eps.items()}})
    for row in scatter:
        if row is scatter[len(Z_GRID)]:
            print("  z = 1, varying q:")
        at = "  ".join(f"t={t}: {m:.4f}±{e:.4f}" for t, (m, e) in row["at"].items())
        print(
            f"  q={row['q']:<4} z={row['z']:<3}  mean regret {row['regret']:.4f}±{row['se']:.4f}  {at}  "
            f"eps moments {row['eps_moments']:.4g}, pld {fmt(row['eps_pld'])}"
        )
    results["synthetic/scatter"] = scatter
    comparison("svm-breast-cancer", args.svm_runs, results, shared_objective=True, ablations=False)
    plot_scatter(scatter, results, base)
    write_json(HERE / "fts_utility_results.json", results)
    print(
        f"\ntotal {time.perf_counter() - start:.0f} s; wrote benchmarks/fts_privacy_utility.png and "
        f"benchmarks/fts_utility_results.json"
    )


def plot_scatter(scatter, results, base) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for key, marker, label in (
        ("eps_moments", "o", "moments (paper recipe)"),
        ("eps_pld", "s", "PLD (tight)"),
    ):
        for group, color in (("z", "C2"), ("q", "C3")):
            z_rows = scatter[: len(Z_GRID)]
            rows = z_rows if group == "z" else [r for r in z_rows if r["z"] == 1.0] + scatter[len(Z_GRID) :]
            rows = [r for r in rows if r[key] is not None]
            ax.errorbar(
                [r[key] for r in rows],
                [r["regret"] for r in rows],
                yerr=[r["se"] for r in rows],
                fmt=marker,
                color=color,
                mfc="none" if key == "eps_pld" else color,
                capsize=2,
                label=f"{'vary z (q=.35)' if group == 'z' else 'vary q (z=1)'}, {label}",
            )
    for alg, style in (("ts", "--"), ("fts-de", ":")):
        m = results[f"synthetic/{alg}/mean_regret"][0]
        ax.axhline(m, ls=style, color="gray", label=f"{alg.upper()} (no privacy)")
    ax.set_xscale("log")
    ax.set_xlabel(f"epsilon at delta = 29^-1.1, T = {base.rounds} (log scale)")
    ax.set_ylabel(f"mean simple regret over iterations 1..{base.rounds}")
    ax.set_title("DP-FTS-DE privacy-utility, synthetic preset")
    ax.legend(fontsize=6)
    fig.tight_layout()
    fd, tmp = tempfile.mkstemp(dir=HERE, suffix=".png")
    os.close(fd)
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, HERE / "fts_privacy_utility.png")


def write_json(path: Path, data) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".json")
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=1, default=str)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
