"""Regret study of Fed-PNE, DP-Fed-PNE and HCT (issue 4), with standard errors over seeds.

* Fed-PNE's average per-client cumulative regret for M = 1, 10, 50 on Garland and DoubleSine at
  T = 10^3 and 10^4, next to HCT's cumulative regret at the same number of rounds (HCT runs
  centrally on the global objective, one evaluation per round, and does not depend on T, so its
  regret at 10^3 is the prefix of the 10^4 run);
* DP-Fed-PNE (M = 10, analytic calibration, dp_delta = 1e-5) for epsilon in 1, 2, 4, 8;
* communication rounds against T = 10^3..10^5.

Writes benchmarks/pne_regret_curves.png, benchmarks/pne_regret_dp.png,
benchmarks/pne_communication.png and benchmarks/pne_regret_results.json.
Usage: python benchmarks/pne_regret.py [--seeds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from dpfed.pne import run_dp_fed_pne, run_fed_pne, run_hct  # noqa: E402

HERE = Path(__file__).resolve().parent
OBJECTIVES = ("garland", "doublesine")
HORIZONS = (1_000, 10_000)
CLIENTS = (1, 10, 50)
EPSILONS = (1.0, 2.0, 4.0, 8.0)


def mean_se(curves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return curves.mean(axis=0), curves.std(axis=0, ddof=1) / np.sqrt(curves.shape[0])


def fmt(curves: np.ndarray) -> str:
    m, s = mean_se(curves[:, -1:])
    return f"{m[0]:8.1f} ± {s[0]:5.1f}"


def write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


def save_figure(fig, path: Path) -> None:
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    write_atomic(path, buffer.getvalue())


def band(ax, curves, label, color):
    m, s = mean_se(curves)
    t = np.arange(1, m.size + 1)
    ax.plot(t, m, label=label, color=color)
    ax.fill_between(t, m - s, m + s, color=color, alpha=0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    seeds = range(args.seeds)
    start = time.perf_counter()
    results: dict = {"seeds": args.seeds, "fed_pne": {}, "hct": {}, "dp_fed_pne": {}, "rounds": {}}
    curves: dict = {}

    print(f"average per-client cumulative regret at T (mean ± standard error over {args.seeds} seeds)")
    print(
        f"{'objective':11s} {'T':>6s}  "
        + "  ".join(f"{'Fed-PNE M=' + str(m):>17s}" for m in CLIENTS)
        + f"  {'HCT':>17s}"
    )
    for name in OBJECTIVES:
        hct = np.array([run_hct(name, max(HORIZONS), seed=s).regret for s in seeds])
        for horizon in HORIZONS:
            row = []
            for m in CLIENTS:
                runs = np.array([run_fed_pne(name, m, horizon, seed=s).regret for s in seeds])
                curves[(name, horizon, m)] = runs
                mm, ss = mean_se(runs[:, -1:])
                results["fed_pne"][f"{name}/T={horizon}/M={m}"] = [float(mm[0]), float(ss[0])]
                row.append(fmt(runs))
            h = hct[:, :horizon]
            curves[(name, horizon, "hct")] = h
            mm, ss = mean_se(h[:, -1:])
            results["hct"][f"{name}/T={horizon}"] = [float(mm[0]), float(ss[0])]
            print(f"{name:11s} {horizon:6d}  " + "  ".join(f"{r:>17s}" for r in row) + f"  {fmt(h):>17s}")

    print("\nFed-PNE per-client regret against HCT (difference beyond 2 standard errors):")
    for name in OBJECTIVES:
        for horizon in HORIZONS:
            hct_m, hct_s = results["hct"][f"{name}/T={horizon}"]
            verdicts = []
            for m in CLIENTS:
                pne_m, pne_s = results["fed_pne"][f"{name}/T={horizon}/M={m}"]
                margin = 2 * np.hypot(hct_s, pne_s)
                verdict = "below" if pne_m < hct_m - margin else "above" if pne_m > hct_m + margin else "tie"
                verdicts.append(f"M={m}: {verdict}")
            results.setdefault("versus_hct", {})[f"{name}/T={horizon}"] = verdicts
            print(f"  {name:11s} T={horizon:<6d} " + ", ".join(verdicts))

    print("\nDP-Fed-PNE, M = 10, analytic calibration, dp_delta = 1e-5 (event level), T = 10^4")
    print(
        f"{'objective':11s}  "
        + "  ".join(f"{'eps=' + format(e, 'g'):>17s}" for e in EPSILONS)
        + f"  {'non-private':>17s}"
    )
    for name in OBJECTIVES:
        row = []
        for eps in EPSILONS:
            runs = np.array([run_dp_fed_pne(name, 10, 10_000, epsilon=eps, seed=s).regret for s in seeds])
            curves[(name, "dp", eps)] = runs
            mm, ss = mean_se(runs[:, -1:])
            results["dp_fed_pne"][f"{name}/eps={eps:g}"] = [float(mm[0]), float(ss[0])]
            row.append(fmt(runs))
        plain = fmt(curves[(name, 10_000, 10)])
        print(f"{name:11s}  " + "  ".join(f"{r:>17s}" for r in row) + f"  {plain:>17s}")

    horizons = np.array([1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000])
    print("\ncommunication rounds (mean over seeds), Garland")
    print(f"{'T':>8s}  " + "  ".join(f"{'M=' + str(m):>7s}" for m in CLIENTS))
    for m in CLIENTS:
        results["rounds"][f"M={m}"] = [
            float(np.mean([run_fed_pne("garland", m, int(t), seed=s).communication_rounds for s in seeds]))
            for t in horizons
        ]
    for j, t in enumerate(horizons):
        print(f"{t:8d}  " + "  ".join(f"{results['rounds'][f'M={m}'][j]:7.2f}" for m in CLIENTS))
    results["rounds"]["T"] = horizons.tolist()

    # plots
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, name in zip(axes, OBJECTIVES, strict=True):
        for color, m in zip(("C0", "C1", "C2"), CLIENTS, strict=True):
            band(ax, curves[(name, 10_000, m)], f"Fed-PNE M={m}", color)
        band(ax, curves[(name, 10_000, "hct")], "HCT (centralised)", "C3")
        ax.set_title(f"{name}: average per-client cumulative regret")
        ax.set_xlabel("round t")
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, HERE / "pne_regret_curves.png")

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, name in zip(axes, OBJECTIVES, strict=True):
        for color, eps in zip(("C0", "C1", "C2", "C4"), EPSILONS, strict=True):
            band(ax, curves[(name, "dp", eps)], f"DP-Fed-PNE eps={eps:g}", color)
        band(ax, curves[(name, 10_000, 10)], "Fed-PNE (non-private)", "k")
        ax.set_title(f"{name}: M=10, dp_delta=1e-5")
        ax.set_xlabel("round t")
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, HERE / "pne_regret_dp.png")

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for m in CLIENTS:
        ax.plot(horizons, results["rounds"][f"M={m}"], marker="o", label=f"M={m}")
    ax.set_xscale("log")
    ax.set_xlabel("horizon T (pulls per client)")
    ax.set_ylabel("communication rounds")
    ax.set_title("Fed-PNE on Garland: rounds grow like log T")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, HERE / "pne_communication.png")

    results["seconds"] = time.perf_counter() - start
    write_atomic(HERE / "pne_regret_results.json", json.dumps(results, indent=2).encode())
    print(
        f"\nwrote benchmarks/pne_regret_*.png, pne_communication.png, pne_regret_results.json "
        f"({results['seconds']:.1f} s)"
    )


if __name__ == "__main__":
    main()
