"""DUETS regret and communication study (issue 12), with standard errors over seeds.

* The seed's experiment (notes A.7): N = 10 agents, T = 50, the four objectives (Branin, Hartmann-4,
  cosine and polynomial on the sphere of R^10), 2000 candidates, noise std 0.2, T_1 = 2, p0 = 10.
  beta is chosen for every algorithm by grid search over {0.2, 0.5, 1, 2, 5}, as in the seed, but on
  separate tuning seeds; the curves use fresh seeds. Algorithms: DUETS, DisKernelUCB (D = 10),
  N-KernelUCB (no communication) and DP-DUETS (ours; agent level, z = 1, public clip) for context.
* The seed's claims: regret order sqrt(N T gamma_NT) (log-log slope of the final regret against T) and
  communication of order gamma_NT (ratio of the communication to the information gain of the queried
  points, gamma = 1/2 log det(I + K_D / lambda), over T = 50..400).
* Speed: one run at N = 10, T = 50, with 1 and 2 BLAS threads.

Writes benchmarks/duets_curves.png and benchmarks/duets_results.json (``--dp-clip-study``: only DP-DUETS
with the public and the sqrt clip schedules, to benchmarks/duets_dp_clip.json).
Usage: python -P benchmarks/duets_regret.py [--runs 10] [--tuning-runs 5] [--dp-clip-study]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import linalg  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from dpfed.duets import DuetsConfig, objective_of, run_dis_kernel_ucb, run_duets  # noqa: E402

HERE = Path(__file__).resolve().parent
OBJECTIVES = ("branin", "hartmann4", "cosine", "polynomial")
BETAS = (0.2, 0.5, 1.0, 2.0, 5.0)
HORIZONS = (50, 100, 200, 400)
ALGORITHMS = {
    "DUETS": lambda c, s: run_duets(c, s),
    "DisKernelUCB": lambda c, s: run_dis_kernel_ucb(c, s, 10.0),
    "N-KernelUCB": lambda c, s: run_dis_kernel_ucb(c, s, math.inf),
    "DP-DUETS (ours)": lambda c, s: run_duets(c.replace(algorithm="dp-duets"), s),
}


def mean_se(curves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return curves.mean(axis=0), curves.std(axis=0, ddof=1) / np.sqrt(curves.shape[0])


@functools.cache
def tune_beta(name: str, objective: str, runs: int) -> float:
    """The grid value with the lowest mean final regret on tuning seeds 1000.. (disjoint from the curves)."""
    scores = {
        b: np.mean(
            [ALGORITHMS[name](DuetsConfig(objective=objective, beta=b), 1000 + r).regret[-1] for r in range(runs)]
        )
        for b in BETAS
    }
    return min(scores, key=scores.get)


def curves_for(objective: str, runs: int, tuning_runs: int) -> dict:
    out = {}
    for name, runner in ALGORITHMS.items():
        beta = tune_beta("DUETS" if name.startswith("DP") else name, objective, tuning_runs)
        config = DuetsConfig(objective=objective, beta=beta)
        results = [runner(config, r) for r in range(runs)]
        regret, regret_se = mean_se(np.array([r.regret for r in results]))
        comm, comm_se = mean_se(np.array([r.communication for r in results]))
        out[name] = {
            "beta": beta,
            "regret": regret.tolist(),
            "regret_se": regret_se.tolist(),
            "communication": comm.tolist(),
            "communication_se": comm_se.tolist(),
        }
        print(
            f"  {objective:10s} {name:16s} beta={beta:<4g} regret {regret[-1]:8.1f} +- {regret_se[-1]:6.1f}  "
            f"communication {comm[-1]:8.1f} +- {comm_se[-1]:6.1f}"
        )
    return out


def information_gain(objective, points: np.ndarray, lam: float) -> float:
    """gamma_D = 1/2 log det(I + K_DD / lambda) of the queried points D (a lower bound of gamma_NT)."""
    data = points.reshape(-1)
    chol = linalg.cholesky(np.eye(data.size) + objective.kernel[np.ix_(data, data)] / lam, lower=True)
    return float(np.log(np.diag(chol)).sum())


def scaling(objective: str, beta: float, runs: int) -> dict:
    rows = []
    for horizon in HORIZONS:
        config = DuetsConfig(objective=objective, beta=beta, horizon=horizon)
        results = [run_duets(config, r) for r in range(runs)]
        gamma = np.mean([information_gain(objective_of(config), r.points, config.lam) for r in results])
        regret = np.array([r.regret[-1] for r in results])
        comm = np.array([r.communication[-1] for r in results])
        rows.append(
            {
                "T": horizon,
                "regret": float(regret.mean()),
                "regret_se": float(regret.std(ddof=1) / np.sqrt(runs)),
                "communication": float(comm.mean()),
                "gamma": float(gamma),
                "comm_per_gamma": float(comm.mean() / gamma),
                "sqrt_NT_gamma": math.sqrt(config.num_agents * horizon * gamma),
            }
        )
    t = np.log([r["T"] for r in rows])
    slope = float(np.polyfit(t, np.log([r["regret"] for r in rows]), 1)[0])
    comm_slope = float(np.polyfit(np.log([r["gamma"] for r in rows]), np.log([r["communication"] for r in rows]), 1)[0])
    print(
        f"  {objective:10s} regret slope vs T {slope:.2f}; log-log slope of communication vs gamma "
        f"{comm_slope:.2f}; comm/gamma {[round(float(r['comm_per_gamma']), 1) for r in rows]}; "
        f"regret/sqrt(NT gamma) {[round(float(r['regret'] / r['sqrt_NT_gamma']), 2) for r in rows]}"
    )
    return {"rows": rows, "regret_slope": slope, "communication_vs_gamma_slope": comm_slope}


def speed(repeats: int = 10) -> dict:
    out = {}
    for threads in (1, 2):
        with threadpool_limits(threads):
            for objective in OBJECTIVES:
                config = DuetsConfig(objective=objective)
                run_duets(config, 0)
                times = []
                for r in range(repeats):
                    start = time.perf_counter()
                    run_duets(config, r)
                    times.append(time.perf_counter() - start)
                out[f"{objective}/{threads}"] = float(np.median(times))
    print("  median seconds per run (N = 10, T = 50): " + ", ".join(f"{k} {v:.3f}" for k, v in out.items()))
    return out


def plot(curves: dict, path: Path) -> None:
    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    for column, objective in enumerate(OBJECTIVES):
        for name, data in curves[objective].items():
            x = np.arange(1, len(data["regret"]) + 1)
            for row, key in enumerate(("regret", "communication")):
                mean, se = np.array(data[key]), np.array(data[key + "_se"])
                axes[row, column].plot(x, mean, label=f"{name} (beta {data['beta']:g})")
                axes[row, column].fill_between(x, mean - se, mean + se, alpha=0.25)
        axes[0, column].set_title(objective)
        axes[0, column].set_ylabel("cumulative regret (sum over agents)")
        axes[1, column].set_ylabel("communication (reals, eq. 2)")
        axes[1, column].set_xlabel("step t")
        axes[0, column].legend(fontsize=7)
    fig.suptitle("DUETS vs baselines, N = 10, T = 50, mean +- 1 s.e.")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def dp_clip_study(runs: int) -> dict:
    """DP-DUETS (ours, agent level, z = 1) final regret: public and sqrt clips, and sqrt without the A.9
    widening of the elimination threshold."""
    out = {}
    for objective in OBJECTIVES:
        beta = tune_beta("DUETS", objective, 5)
        for clip, correction in (("public", True), ("sqrt", True), ("sqrt", False)):
            config = DuetsConfig(
                objective=objective, beta=beta, algorithm="dp-duets", agent_clip=clip, noise_correction=correction
            )
            clip = clip if correction else clip + "-uncorrected"
            final = np.array([run_duets(config, r).regret[-1] for r in range(runs)])
            se = float(final.std(ddof=1) / np.sqrt(runs))
            out[f"{objective}/{clip}"] = [float(final.mean()), se]
            print(f"  {objective:10s} DP-DUETS clip={clip:16s} regret {final.mean():8.1f} +- {se:.1f}")
    (HERE / "duets_dp_clip.json").write_text(json.dumps(out, indent=1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tuning-runs", type=int, default=5)
    parser.add_argument("--scaling-runs", type=int, default=5)
    parser.add_argument("--dp-clip-study", action="store_true", help="only the DP-DUETS clip comparison")
    args = parser.parse_args()
    if args.dp_clip_study:
        dp_clip_study(args.runs)
        return
    print("speed")
    timings = speed()
    print("curves (N = 10, T = 50)")
    curves = {o: curves_for(o, args.runs, args.tuning_runs) for o in OBJECTIVES}
    print("scaling of DUETS with T (N = 10)")
    scale = {o: scaling(o, curves[o]["DUETS"]["beta"], args.scaling_runs) for o in OBJECTIVES}
    plot(curves, HERE / "duets_curves.png")
    results = {
        "runs": args.runs,
        "tuning_runs": args.tuning_runs,
        "speed_seconds": timings,
        "curves": curves,
        "scaling": scale,
    }
    (HERE / "duets_results.json").write_text(json.dumps(results, indent=1))
    print(f"wrote {HERE / 'duets_curves.png'} and {HERE / 'duets_results.json'}")


if __name__ == "__main__":
    main()
