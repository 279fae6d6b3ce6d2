"""DUETS run time at the seed's scale (N = 10, T = 50): the vectorised run against a per-agent loop.

The loop version is the straightforward protocol simulation: every agent computes its own features and
statistic, and every agent evaluates mu~ and the elimination rule itself (the server's exact variance and
inducing set are the same code). Both must give the same transcript; the script checks it and prints the
median run time of each and their ratio, with 1 and 2 BLAS threads.
Usage: python -P benchmarks/duets_speed.py [--repeats 10]
"""

from __future__ import annotations

import argparse
import time
from unittest import mock

import numpy as np
from threadpoolctl import threadpool_limits

import dpfed.duets.algorithm as algorithm
from dpfed.duets import DuetsConfig, run_duets
from dpfed.duets.surrogate import NystromFeatures, SparseModel
from dpfed.transcript import BROADCAST, SERVER, agent_name


def communicate_per_agent(config, objective, consts, log, points, rewards, active, rng, transcript):
    """``algorithm.communicate`` with one agent at a time (non-private DUETS only)."""
    j, kernel = log.epoch, objective.kernel
    sigma_max, p, inducing = algorithm.select_inducing(objective, config, points, active, consts["p0"], rng["server"])
    features = NystromFeatures.build(kernel, inducing, config.jitter)
    transcript.add(j, SERVER, BROADCAST, "inducing_set", objective.candidates[inducing])
    per_agent = [features(kernel, points[n]) for n in range(points.shape[0])]
    total = np.zeros(features.rank)
    for n, z in enumerate(per_agent):
        statistic = z.T @ rewards[n]
        transcript.add(j, agent_name(n), SERVER, "statistic", statistic)
        total += statistic
    model = SparseModel.build(np.concatenate(per_agent), config.lam)
    v_bar = model.solve(total)
    transcript.add(j, SERVER, BROADCAST, "v_bar", v_bar)
    transcript.add(j, SERVER, BROADCAST, "sigma_max", sigma_max)
    for _ in range(points.shape[0]):  # every agent eliminates on its own copy
        z_active = features(kernel, active)
        keep, margin = algorithm.eliminate(
            config, model, model.mean(z_active, v_bar), model.scaled_variance(z_active), consts["beta"], sigma_max, 0.0
        )
    log.sigma_max, log.inclusion_probability, log.inducing = sigma_max, p, inducing
    log.threshold, log.model, log.active_after, log.active_set = margin, model, int(keep.sum()), active[keep]
    return active[keep], (objective.dim + 1) * inducing.size + 1, inducing.size


def median_time(runner, repeats: int) -> float:
    times = []
    for r in range(repeats):
        start = time.perf_counter()
        runner(r)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    for objective in ("branin", "hartmann4", "cosine", "polynomial"):
        config = DuetsConfig(objective=objective)
        vectorised = run_duets(config, 0)
        with mock.patch.object(algorithm, "communicate", communicate_per_agent):
            looped = run_duets(config, 0)
        same = all(
            np.allclose(a.payload, b.payload) for a, b in zip(vectorised.transcript, looped.transcript, strict=True)
        )
        for threads in (1, 2):
            with threadpool_limits(threads):
                fast = median_time(lambda r, c=config: run_duets(c, r), args.repeats)
                with mock.patch.object(algorithm, "communicate", communicate_per_agent):
                    slow = median_time(lambda r, c=config: run_duets(c, r), args.repeats)
            print(
                f"{objective:10s} threads={threads}  vectorised {fast:.3f} s  per-agent loop {slow:.3f} s  "
                f"ratio {slow / fast:.1f}x  same transcript: {same}"
            )


if __name__ == "__main__":
    main()
