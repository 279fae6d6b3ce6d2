"""DP-Fed-PNE end to end with the replay score (issue 16) against the mechanism-level probe, the
planted half-noise client (issue 21) and null worlds (a script, not a timed test).

Setting: the bundled planted-bug matrix target of ``configs/audit_dpfedpne.toml`` (Garland, 10 clients,
T = 20, analytic calibration, epsilon = 3, delta = 1e-5, canary 10x beyond the clip bound), seed 2026,
confidence 0.95, Clopper-Pearson bounds through ``run_attack`` (in one process).
Usage: PYTHONPATH=$PWD python benchmarks/pne_replay.py [--trials 10000] [--null-reps 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE] + [_HERE]

from attacks.attack import run_attack  # noqa: E402
from attacks.probes.pne import PneEndToEndProbe, PneRewardProbe  # noqa: E402
from attacks.probes.pne_replay import data_streams  # noqa: E402
from dpfed.pne.private import RewardPrivatizer  # noqa: E402

SETTING = dict(epsilon=3.0, delta=1e-5, calibration="analytic")
SEED = 2026


def _line(label, result, cpu):
    best = result.verdict.best_bound
    bound = float("nan") if best is None else best.epsilon
    print(f"{label:<44} CP {bound:6.3f}  {result.verdict.status:<10} cpu {cpu:6.1f} s", flush=True)
    return bound


def _attack(label, probe, trials, seed=SEED):
    start = time.process_time()
    result = run_attack(probe, trials, seed=seed, claim_epsilon=3.0, claim_delta=1e-5)
    return _line(label, result, time.process_time() - start)


def _exactness(horizon: int, runs: int) -> None:
    """Replay every phase of ``runs`` correct runs: schedules that differ from the replayed ones, and the
    largest |residual - upload| (the canary node is pulled once, so the residual is the upload)."""
    probe = PneEndToEndProbe(horizon=horizon, **SETTING)
    rng = np.random.default_rng(7)
    entropies = [int(rng.integers(2**63)) for _ in range(runs)]
    done = probe._runs(1, [np.random.SeedSequence(e) for e in entropies])
    replays = [probe._observer.replay(run, data_streams(e), through=0) for run, e in zip(done, entropies, strict=True)]
    phases = sum(len(run.phases) for run in done)
    gap = max(abs(r.residual - probe._upload(run, probe._node)) for r, run in zip(replays, done, strict=True))
    deviations = sum(r.deviations for r in replays)
    print(f"exactness, T = {horizon}: {runs} runs, {phases} phases replayed, {deviations} deviating, max gap {gap:.1e}")


def _ratios(trials: int, seeds: int) -> None:
    """Replay / mechanism-level certified epsilon at ``trials`` per world, seeds 1..``seeds``."""
    end_to_end = PneEndToEndProbe(horizon=20, canary_value=10.0, **SETTING)
    ratios = []
    for seed in range(1, seeds + 1):
        mech = _attack(f"pne-reward, {trials} trials, seed {seed}", PneRewardProbe(**SETTING), trials, seed)
        ratios.append(_attack(f"replay, {trials} trials, seed {seed}", end_to_end, trials, seed) / mech)
    print(f"ratio replay / mechanism: mean {np.mean(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=float, default=1e4)
    parser.add_argument("--null-reps", type=int, default=200)
    parser.add_argument("--ratio-seeds", type=int, default=0, help="only: replay/mechanism ratio over seeds")
    args = parser.parse_args()
    if args.ratio_seeds:
        return _ratios(int(args.trials), args.ratio_seeds)
    trials = int(args.trials)
    end_to_end = PneEndToEndProbe(horizon=20, canary_value=10.0, **SETTING)
    print(f"threat model: {end_to_end.threat_model}")
    for horizon in (20, 2000):
        _exactness(horizon, 1000)
    for n in (2000, trials):
        mech = _attack(f"pne-reward (mechanism), {n} trials", PneRewardProbe(**SETTING), n)
        replay = _attack(f"pne-end-to-end replay, {n} trials", end_to_end, n)
        print(f"  ratio replay / mechanism: {replay / mech:.3f}")
    upload_probe = PneEndToEndProbe(horizon=20, score="upload", **SETTING)
    upload = _attack(f"pne-end-to-end upload score, {trials} trials", upload_probe, trials)
    from tests.attacks.test_matrix_pne import _half_noise_client, _null_world_rate

    call = RewardPrivatizer.__call__
    RewardPrivatizer.__call__ = _half_noise_client(0)
    _attack(f"HALF-NOISE client 0, replay, {trials} trials", end_to_end, trials)
    RewardPrivatizer.__call__ = call
    start = time.process_time()
    null = PneEndToEndProbe(epsilon=1.0, calibration="analytic", horizon=20, canary_value=10.0)
    rate, jumps = _null_world_rate(null, 0.0, args.null_reps, 25, world_in=0)
    print(
        f"null worlds: {args.null_reps} x 25 trials per world, positive rigorous bounds {rate:.3f} "
        f"(nominal 0.05), decision jumps {jumps}, cpu {time.process_time() - start:.1f} s"
    )
    print(f"(the upload score at {trials} trials: {upload:.3f})")


if __name__ == "__main__":
    main()
