"""DP-FTS-DE end to end with the replay score (issue 16) side by side with the server-mechanism probe, the
planted half-noise server (issue 21) and the reconstruction's floating-point residual (a script, not a
timed test).

Setting: ``fts-end-to-end`` at its defaults (preset ``synthetic``, full 60-round runs, 29 agents plus the
canary slot, q = 0.35, z = 1, S = 22, P = 4, the reference weight schedule; claim: the tight epsilon 6.20
of that schedule at delta = 29^-1.1). Both worlds' runs are drawn once per budget on ``--workers`` worker
processes, and the ``replay`` and ``canary`` scores are computed from the same runs. Peers at the same
number of trials, same estimator (Clopper-Pearson, Bonferroni over its thresholds, 95%):

* ``fts-server (matched)``: the server-mechanism probe on the end-to-end probe's own mechanism (reference
  schedule, 30 declared slots, canary in slot 29), the Neyman-Pearson optimum the replay can reach;
* ``fts-server (uniform)``: ``configs/attack_fts_server.toml``'s setting (uniform weights, 29 agents:
  another, less private mechanism, tight epsilon 10.38), for reference.

``--half-noise`` plants the bug of ``tests/attacks/test_matrix_fts.py`` (the server releases with half its
noise multiplier; configuration and accountants unchanged). ``--residual`` measures the replay's residual
on world-0 runs whose server adds no noise (the residual is then floating-point error only).
Usage: PYTHONPATH=$PWD python benchmarks/fts_replay.py [--trials 2000 10000] [--workers 2] [--half-noise]
       PYTHONPATH=$PWD python benchmarks/fts_replay.py --residual
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE] + [_ROOT]

from attacks.estimators.clopper_pearson import clopper_pearson_lower_bound  # noqa: E402
from attacks.probes.fts import FtsServerProbe  # noqa: E402
from attacks.probes.fts_end_to_end import RUNS_PER_CALL, FtsEndToEndProbe  # noqa: E402
from attacks.verdict import decide  # noqa: E402

SEED = 2026
DELTA = 29.0**-1.1
_PROBES: dict = {}


def _plant(bug: str | None) -> None:
    """Plant ``bug`` into this process's server (worker initialiser)."""
    if bug is None:
        return
    from dpfed.fts.server import Server
    from tests.attacks.test_matrix_fts import BUGS

    Server.aggregate = BUGS[bug]


def _task(world: int, seed: np.random.SeedSequence, trials: int) -> tuple[dict, float]:
    """Scores of ``trials`` runs of ``world`` (both scores from the same runs) and the CPU seconds."""
    from dpfed.fts.algorithm import run_fts_batch

    start = time.process_time()
    if not _PROBES:
        _PROBES["replay"], _PROBES["canary"] = FtsEndToEndProbe(), FtsEndToEndProbe(score="canary")
    probe = _PROBES["replay"]
    batch = run_fts_batch(
        probe._config,
        np.random.default_rng(seed).spawn(trials),
        objective=probe.objective(),
        canary_vector=probe._canary_vector() if world else None,
        record_uploads=True,
    )
    scores = {name: p._score(batch) for name, p in _PROBES.items()}
    return scores, time.process_time() - start


def end_to_end(trials: int, workers: int, bug: str | None, seed: int = SEED):
    """Scores per world and score name, wall seconds and CPU seconds per run."""
    root = np.random.SeedSequence([seed, trials])
    chunks = [RUNS_PER_CALL] * (trials // RUNS_PER_CALL) + ([trials % RUNS_PER_CALL] if trials % RUNS_PER_CALL else [])
    started = time.perf_counter()
    with ProcessPoolExecutor(workers, initializer=_plant, initargs=(bug,)) as pool:
        futures = {
            world: [pool.submit(_task, world, s, n) for s, n in zip(root.spawn(len(chunks)), chunks, strict=True)]
            for world in (0, 1)
        }
        done = {world: [f.result() for f in fs] for world, fs in futures.items()}
    wall = time.perf_counter() - started
    cpu = sum(c for results in done.values() for _, c in results)
    scores = {
        world: {name: np.concatenate([s[name] for s, _ in results]) for name in ("replay", "canary")}
        for world, results in done.items()
    }
    return scores, wall, cpu / (2 * trials)


def _cp(out, inn) -> float:
    return clopper_pearson_lower_bound(out, inn, DELTA, 0.95).epsilon


def _server(probe, trials: int, seed: int = SEED) -> float:
    rng = np.random.default_rng([seed, trials, 7])
    return _cp(probe.scores(0, trials, rng), probe.scores(1, trials, rng))


def compare(trials_list, workers: int, bug: str | None) -> None:
    claim = FtsEndToEndProbe().true_epsilon(DELTA)
    matched = FtsServerProbe(rounds=60, agents=30, canary=29, schedule="reference", delta=DELTA)
    uniform = FtsServerProbe(rounds=60, agents=29, schedule="uniform", delta=DELTA)
    label = f" (planted: {bug})" if bug else ""
    print(f"fts-end-to-end{label}, claim {claim:.3f} at delta {DELTA:.4f}; Clopper-Pearson 95%, seed {SEED}")
    print(
        f"{'trials':>7} {'replay':>7} {'canary':>7} {'server matched':>15} {'ratio':>6} "
        f"{'server uniform':>15} {'ratio':>6} {'verdict':>10} {'wall s':>7} {'cpu s/run':>9}"
    )
    for trials in trials_list:
        scores, wall, per_run = end_to_end(trials, workers, bug)
        replay = _cp(scores[0]["replay"], scores[1]["replay"])
        canary = _cp(scores[0]["canary"], scores[1]["canary"])
        peer, wide = _server(matched, trials), _server(uniform, trials)
        bound = clopper_pearson_lower_bound(scores[0]["replay"], scores[1]["replay"], DELTA, 0.95)
        verdict = decide(claim, DELTA, [bound], trials, 0.95).status
        print(
            f"{trials:>7} {replay:7.3f} {canary:7.3f} {peer:15.3f} {replay / peer:6.2f} {wide:15.3f} "
            f"{replay / wide:6.2f} {verdict:>10} {wall:7.1f} {per_run:9.4f}",
            flush=True,
        )


def residual(runs: int = 200) -> None:
    """Largest |broadcast - reconstruction| of world-0 runs through a server that adds no noise."""
    _plant("unnoised-broadcast")
    from dpfed.fts.algorithm import run_fts_batch

    probe = FtsEndToEndProbe()
    observer, worst = probe._observer, 0.0
    for seeds in np.array_split(np.random.default_rng(7).spawn(runs), max(1, runs // RUNS_PER_CALL)):
        batch = run_fts_batch(probe._config, list(seeds), objective=probe.objective(), record_uploads=True)
        worst = max(worst, float(np.abs(observer.residuals(batch.broadcasts, batch.uploads, batch.sampled)).max()))
    sigma = float(observer.noise_std().min())
    print(
        f"residual of {runs} world-0 runs (60 rounds, no noise): max |r| {worst:.2e}, "
        f"{worst / sigma:.2e} noise standard deviations (smallest sigma {sigma:.3f})"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=float, nargs="+", default=[2000, 10000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--half-noise", action="store_true")
    parser.add_argument("--residual", action="store_true")
    args = parser.parse_args(argv)
    if args.residual:
        residual()
        return
    compare([int(t) for t in args.trials], args.workers, "half-noise" if args.half_noise else None)


if __name__ == "__main__":
    main()
