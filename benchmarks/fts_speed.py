"""Speed of one DP-FTS-DE run at the landmine scale (29 agents, 60 rounds, M = 100, P = 4, d = 2).

Compares ``dpfed.fts.run_fts`` (vectorised across agents) with a direct loop over agents that performs
the same algorithm agent by agent (per-agent Cholesky of the M x M posterior precision, per-agent
candidate sets and refinement), as the reference code does. The objective is the synthetic GP (cheap),
so the timing is the algorithm's, not the SVM fits'. Also times the default SVM preset, cold and warm
cache. Prints seconds per run and the ratio.  Usage: python benchmarks/fts_speed.py [--repeats 3]

``--trial-axis`` instead times the DP-FTS-DE end-to-end probe's full 60-round runs three ways, side by
side: the previous implementation one run at a time (``baseline_checkout``; as the old probe ran them,
and on the new probe's configuration), ``run_fts`` one run at a time, and ``run_fts_batch``; then the
probe itself at 2000 trials per world (``--probe-trials``) with the ``processes`` executor.

``--trial-axis --backend torch [--device cpu|cuda]`` instead times the same batched runs on NumPy and on
PyTorch side by side in one process (``run_fts_batch(backend=...)``; one CPU thread each), for a few runs
per call (``--runs-per-call``; numpy at most 100), and prints wall and CPU ms per run, the ratios and the
torch runs per second (torch draws on the device: ``dpfed.device_random``). On a GPU:
``--device cuda --runs-per-call 100,1000,10000`` (``benchmarks/gpu_check.py`` is the one-call check).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

# benchmarks/accounting.py and attacks.py would shadow the packages while this folder leads sys.path:
# move it to the end (its helper modules stay importable)
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE] + [_HERE]

from dpfed.fts import FTSConfig, run_fts  # noqa: E402
from dpfed.fts.acquisition import LinearFunctions, PiecewiseFunction, maximise  # noqa: E402
from dpfed.fts.features import RandomFourierFeatures  # noqa: E402
from dpfed.fts.partition import assignment, box_partition  # noqa: E402
from dpfed.fts.schedules import mixing_probability  # noqa: E402
from dpfed.fts.server import Server  # noqa: E402
from dpfed.objectives import make_objective  # noqa: E402


def posterior_sample_one(phi, y, lam, rng, centre=False):
    """Weight-space posterior draw for one agent (M x M Cholesky), as in the reference agent code."""
    offset = y.mean() if centre else 0.0
    m = phi.shape[1]
    chol = np.linalg.cholesky(phi.T @ phi + lam * np.eye(m))
    nu = np.linalg.solve(chol.T, np.linalg.solve(chol, phi.T @ (y - offset)))
    return nu + np.sqrt(lam) * np.linalg.solve(chol.T, rng.standard_normal(m)), offset


def run_loop(c: FTSConfig, seed: int) -> np.ndarray:
    """DP-FTS-DE with a Python loop over agents; returns the mean utility curve."""
    r_obj, r_feat, r_agent, r_server, r_obs, r_init = np.random.default_rng(seed).spawn(6)
    objective = make_objective(c, r_obj)
    n, d, p = c.num_agents, c.dim, c.effective_subregions
    boxes, regions = box_partition(d, p), assignment(n, p)
    shared = RandomFourierFeatures.draw(d, c.num_features, c.lengthscale, r_feat, c.kernel_variance)
    local = RandomFourierFeatures.draw(d, c.local_num_features, c.local_lengthscale, r_feat)
    xs, ys, best, utility = [], [], [], []
    for a in range(n):
        b = boxes[regions[a]]
        x0 = b[0] + r_init.random((c.init_points, d)) * (b[1] - b[0])
        y0, t0 = objective.evaluate(np.repeat(x0[None], n, axis=0), r_obs)  # row a is agent a's
        xs.append(list(x0))
        ys.append(list(y0[a]))
        best.append(t0[a].max())
    utility.append(objective.utility(np.array(best)).mean())
    server = Server(regions, p, c.mechanism(), c.weight_gap, c.weight_hold, c.weight_decay)
    acq = dict(candidates=c.candidates, refine_steps=c.refine_steps, refine_samples=c.refine_samples)
    for j in range(1, c.rounds + 1):
        uploads = np.array(
            [
                posterior_sample_one(shared(np.array(xs[a])), np.array(ys[a]), c.obs_noise_var, r_agent)[0]
                for a in range(n)
            ]
        )
        blocks, _ = server.aggregate(uploads, np.ones(n, bool), j - 1, r_server)
        new_x = np.zeros((n, d))
        for a in range(n):
            if r_agent.random() < mixing_probability(j, c.mixing):
                w, off = posterior_sample_one(
                    local(np.array(xs[a])), np.array(ys[a]), c.local_noise_var, r_agent, centre=True
                )
                x, _ = maximise(LinearFunctions(local, w[None], np.array([off])), d, r_agent, **acq)
            else:
                x, _ = maximise(PiecewiseFunction(shared, blocks, boxes), d, r_agent, **acq)
            new_x[a] = x[0]
        y, t = objective.evaluate(new_x[:, None, :], r_obs)
        for a in range(n):
            xs[a].append(new_x[a])
            ys[a].append(y[a, 0])
            best[a] = max(best[a], t[a, 0])
        utility.append(objective.utility(np.array(best)).mean())
    return np.array(utility)


def timed(fn, repeats):
    times = []
    for r in range(repeats):
        start = time.perf_counter()
        fn(r)
        times.append(time.perf_counter() - start)
    return float(np.median(times)), float(np.min(times))


OLD_RUNS = """
import json, time, numpy as np
from dpfed.fts.config import FTSConfig
from dpfed.fts.algorithm import run_fts
from dpfed.objectives.synthetic import SyntheticGP
out = {}
old = FTSConfig.from_preset("synthetic", rounds=60, candidates=100, refine_steps=1).with_canary_slot()
new = FTSConfig.from_preset("synthetic", rounds=60, candidates=50, refine_steps=0, num_features=20,
                            local_num_features=20).with_canary_slot()
objective = SyntheticGP(new.num_agents, 1, np.random.default_rng(0), lengthscale=new.gp_lengthscale,
                        heterogeneity=new.heterogeneity, noise_var=new.objective_noise_var, num_basis=64)
for name, config, shared in (("old probe", old, None), ("new probe config", new, objective)):
    canary = np.zeros(config.num_features)
    canary[0] = config.per_vector_clip
    wall, cpu = time.perf_counter(), time.process_time()
    for seed in range(RUNS):
        run_fts(config, seed, canary_vector=canary, objective=shared)
    out[name] = [(time.perf_counter() - wall) / RUNS, (time.process_time() - cpu) / RUNS]
print(json.dumps(out))
"""


def trial_axis(runs: int, probe_trials: int) -> None:
    """Seconds per full run: previous implementation, run_fts and run_fts_batch (see module docstring)."""
    from baseline_checkout import run_at_commit

    from attacks.attack import run_attack
    from attacks.probes import get_probe
    from attacks.probes.fts_end_to_end import RUNS_PER_CALL
    from dpfed.fts.algorithm import run_fts_batch

    probe = get_probe("fts-end-to-end")
    config, objective = probe._config, probe.objective()
    canary = np.zeros(config.num_features)
    canary[0] = config.per_vector_clip
    rows = {f"previous implementation, {k}": v for k, v in run_at_commit(OLD_RUNS.replace("RUNS", str(runs))).items()}
    rows["run_fts, one at a time"] = per_run(
        lambda seeds: [run_fts(config, s, canary_vector=canary, objective=objective) for s in seeds], runs
    )
    rows[f"run_fts_batch, {RUNS_PER_CALL} runs per call"] = per_run(
        lambda seeds: run_fts_batch(config, seeds, canary_vector=canary, objective=objective, record_uploads=False),
        RUNS_PER_CALL * max(1, runs // RUNS_PER_CALL),
    )
    batched = rows[f"run_fts_batch, {RUNS_PER_CALL} runs per call"]
    print(f"{'DP-FTS-DE full 60-round run (one core)':48s} {'wall ms':>8s} {'cpu ms':>8s} {'speed-up (cpu)':>14s}")
    for name, (wall, cpu) in rows.items():
        print(f"{name:48s} {1e3 * wall:8.1f} {1e3 * cpu:8.1f} {cpu / batched[1]:13.1f}x")
    start = time.perf_counter()
    result = run_attack(probe, probe_trials, seed=1, executor="processes", workers=2)
    print(
        f"fts-end-to-end probe, {probe_trials} trials per world, processes x2: {time.perf_counter() - start:.0f} s "
        f"wall; CP lower bound {result.best_rigorous():.2f} (claim {result.claim_epsilon:.2f}, {result.status})"
    )


NUMPY_RUNS_MAX = 100  # numpy's cost per run is flat beyond ~25 runs per call: larger sizes time torch only


def backends_side_by_side(device: str, sizes: list[int]) -> None:
    """ms per full 60-round end-to-end run: numpy vs torch on ``device``, ``sizes`` runs per call (numpy
    at most ``NUMPY_RUNS_MAX``)."""
    from attacks.probes import get_probe
    from dpfed.fts.algorithm import run_fts_batch

    probe = get_probe("fts-end-to-end")
    config, objective = probe._config, probe.objective()
    canary = np.zeros(config.num_features)
    canary[0] = config.per_vector_clip

    def batch(backend, where):
        options = dict(canary_vector=canary, objective=objective, record_uploads=False)
        return lambda seeds: run_fts_batch(config, seeds, backend=backend, device=where, **options)

    batch("torch", device)([0])  # warm-up (imports, kernels)
    print(f"DP-FTS-DE full {config.rounds}-round end-to-end run, ms per run; torch on {device}")
    print(
        f"{'runs/call':>9s} {'numpy wall':>10s} {'numpy cpu':>9s} {'torch wall':>10s} {'torch cpu':>9s} "
        f"{'cpu ratio':>9s} {'wall ratio':>10s} {'torch runs/s':>12s}"
    )
    for size in sizes:
        numpy_wall, numpy_cpu = per_run(batch("numpy", "cpu"), min(size, NUMPY_RUNS_MAX))
        torch_wall, torch_cpu = per_run(batch("torch", device), size, device)
        print(
            f"{size:9d} {1e3 * numpy_wall:10.1f} {1e3 * numpy_cpu:9.1f} {1e3 * torch_wall:10.1f} "
            f"{1e3 * torch_cpu:9.1f} {torch_cpu / numpy_cpu:8.2f}x {torch_wall / numpy_wall:9.2f}x "
            f"{1 / torch_wall:12.1f}"
        )


def per_run(run_many, runs: int, device: str = "cpu") -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    run_many(list(range(runs)))
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()
    return (time.perf_counter() - wall) / runs, (time.process_time() - cpu) / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trial-axis", action="store_true", help="time the end-to-end probe's runs")
    parser.add_argument("--runs", type=int, default=20, help="runs per way with --trial-axis")
    parser.add_argument("--probe-trials", type=int, default=2000)
    parser.add_argument(
        "--backend",
        choices=["numpy", "torch"],
        default="numpy",
        help="with --trial-axis: torch times numpy and torch batches side by side",
    )
    parser.add_argument("--device", default="cpu", help="torch device for --backend torch (cpu, cuda)")
    parser.add_argument("--runs-per-call", default="25,100", help="comma-separated batch sizes (--backend torch)")
    args = parser.parse_args()
    if args.trial_axis and args.backend == "torch":
        from accounting.errors import ConfigurationError
        from dpfed.arrays import check_backend

        try:
            check_backend("torch", args.device)
        except ConfigurationError as error:
            sys.exit(f"fts_speed.py: {error}")
        backends_side_by_side(args.device, [int(k) for k in args.runs_per_call.split(",")])
        return
    if args.trial_axis:
        trial_axis(args.runs, args.probe_trials)
        return
    cfg = FTSConfig(
        objective="synthetic",
        dim=2,
        num_agents=29,
        rounds=60,
        num_features=100,
        subregions=4,
        lengthscale=0.01,
        obs_noise_var=1e-6,
    )
    vec_med, vec_min = timed(lambda s: run_fts(cfg, s), args.repeats)
    with threadpool_limits(limits=1, user_api="blas"):
        loop_med, loop_min = timed(lambda s: run_loop(cfg, s), args.repeats)
    print("DP-FTS-DE, landmine scale (N=29, T=60, M=100, P=4, d=2), synthetic objective")
    print(f"  vectorised run_fts : median {vec_med:.2f} s  (min {vec_min:.2f} s) over {args.repeats} runs")
    print(f"  per-agent loop     : median {loop_med:.2f} s  (min {loop_min:.2f} s)")
    print(f"  ratio loop / vectorised (median): {loop_med / vec_med:.1f}x")
    svm = FTSConfig.from_preset("svm-breast-cancer")
    objective = make_objective(svm, 0)
    cold = timed(lambda s: run_fts(svm, s, objective=objective), 1)[0]
    warm = timed(lambda s: run_fts(svm, s, objective=objective), 1)[0]
    print(
        f"svm-breast-cancer preset (same scale): cold SVM-fit cache {cold:.2f} s, warm cache {warm:.2f} s "
        f"({objective.fits} fits cached)"
    )


if __name__ == "__main__":
    main()
