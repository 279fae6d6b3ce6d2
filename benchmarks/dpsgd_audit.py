"""DP-SGD audit on opacus (BENCHMARKS.md, "DP-SGD on opacus"): the bundled example (logistic regression
on scikit-learn's breast-cancer data, sample rate 1/2, 20 steps, clip 1, noise multiplier 2.64), three
threat models side by side, one-run, a null test and the planted half noise.

1. Multi-run, gradient canary: ``--trials`` trials per world from real opacus runs (``--per-run``
   canary coordinates per run); the all-iterates score and the last-iterate score are computed from
   the same runs (two views of one training); the final model with an input canary trains one model
   per trial (``--final-trials`` per world). Bounds: Clopper-Pearson (95%, rigorous) and GDP
   (model-based), against the accountants' epsilon at delta 1e-5 (ours: PLD; opacus: PRV and RDP).
2. One-run: ``--one-run-canaries`` gradient canaries in one training run, each included with
   probability 1/2; Steinke et al.'s bound and the Gaussian f-DP bound on the same scores.
3. Null test: ``--null-repeats`` audits of ``--null-trials`` per world with the canary never inserted
   (both worlds are opacus runs without it) and as many one-run audits with no canary inserted: the
   number of positive rigorous bounds against the nominal 5% rate. Planted half noise: opacus's noise
   scaled by 1/2 behind its back, multi-run (``--bug-trials``) and one-run: the verdict.

    PYTHONPATH=. python benchmarks/dpsgd_audit.py [--trials 300000] [--final-trials 200]

Times: wall-clock seconds on a machine shared with other jobs (2 cores), and this process's CPU seconds
(the trainings run torch on one thread: ``dpfed.dpsgd.train.one_thread``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from attacks.attack import run_attack  # noqa: E402
from attacks.estimators import estimate_all  # noqa: E402
from attacks.probes import get_probe  # noqa: E402
from attacks.probes.dpsgd_one_run import one_run_gradient_canaries  # noqa: E402

DELTA = 1e-5


def bounds_row(label, out_scores, in_scores, eps, seconds, trials):
    bounds = estimate_all(out_scores, in_scores, DELTA, methods=("clopper-pearson", "gdp"))
    found = {b.method: b.epsilon for b in bounds}
    cp, gdp = found["clopper-pearson"], found["gdp"]
    auc = stats.mannwhitneyu(in_scores, out_scores).statistic / (len(in_scores) * len(out_scores))
    print(f"{label:<34}{trials:>9}{auc:>7.3f}{cp:>9.3f}{cp / eps:>7.2f}{gdp:>9.3f}{gdp / eps:>7.2f}{seconds:>9.1f}",
          flush=True)
    return cp, gdp


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=300_000)
    parser.add_argument("--per-run", type=int, default=2000)
    parser.add_argument("--final-trials", type=int, default=200)
    parser.add_argument("--one-run-canaries", type=int, default=10_000)
    parser.add_argument("--null-repeats", type=int, default=20)
    parser.add_argument("--null-trials", type=int, default=2000)
    parser.add_argument("--bug-trials", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--sections", default="1,2,3", help="which sections to run (comma-separated)")
    args = parser.parse_args(argv)

    probe = get_probe("dpsgd-all-iterates", canaries_per_run=args.per_run)
    last = get_probe("dpsgd-last-iterate", canaries_per_run=args.per_run)
    setup = probe.training_setup()
    ours = probe.true_epsilon(DELTA)
    prv, rdp = setup.opacus_epsilon(DELTA, "prv"), setup.opacus_epsilon(DELTA, "rdp")
    print(f"setup: {setup.name}, {setup.examples} examples, sample rate {setup.sample_rate}, {setup.steps} steps, "
          f"clip {setup.clip}, noise multiplier {setup.noise_multiplier}")
    print(f"epsilon at delta {DELTA:g}: ours (PLD) {ours:.3f}, opacus PRV {prv:.3f}, opacus RDP {rdp:.3f}; "
          "ratios below are to ours (PLD)\n")

    sections = {int(x) for x in args.sections.split(",")}
    rng = np.random.default_rng(args.seed)
    if 1 in sections:
        multi_run(args, probe, last, ours, rng)
    if 2 in sections:
        one_run(args, probe, ours)
    if 3 in sections:
        null_and_bug(args, probe, prv, rng)
    print(f"CPU time of this process: {time.process_time():.0f} s")
    return 0


def multi_run(args, probe, last, ours, rng):
    print("== 1. multi-run: three threat models (95% confidence)")
    print(f"{'view':<34}{'trials':>9}{'AUC':>7}{'CP':>9}{'/eps':>7}{'GDP':>9}{'/eps':>7}{'seconds':>9}")
    start, cpu = time.perf_counter(), time.process_time()
    updates = [probe.updates(world, args.trials, rng) for world in (0, 1)]
    trained, trained_cpu = time.perf_counter() - start, time.process_time() - cpu
    cp, gdp = bounds_row("all iterates, gradient canary", probe.score_updates(updates[0]),
                         probe.score_updates(updates[1]), ours, time.perf_counter() - start, args.trials)
    bounds_row("last iterate, gradient canary", last.score_updates(updates[0]), last.score_updates(updates[1]),
               ours, trained, args.trials)
    final = get_probe("dpsgd-final-model")
    start = time.perf_counter()
    final_scores = [final.scores(world, args.final_trials, rng) for world in (0, 1)]
    bounds_row("final model, input canary", *final_scores, ours, time.perf_counter() - start, args.final_trials)
    print(f"(the two gradient-canary views share {trained:.1f} s of opacus training, {trained_cpu:.0f} CPU s: "
          f"{2 * args.trials / trained:.0f} trials per second)")
    print(f"must-show 1: CP / eps = {cp / ours:.2f} (goal >= 0.6), GDP / eps = {gdp / ours:.2f} (goal >= 0.9)\n")


def one_run(args, probe, ours):
    print("== 2. one-run: gradient canaries in one training run, all iterates")
    start = time.perf_counter()
    one = one_run_gradient_canaries(probe, args.one_run_canaries, args.seed, DELTA)
    steinke, fdp = one.bound("one-run").epsilon, one.bound("fdp-one-run").epsilon
    print(f"{args.one_run_canaries} canaries ({one.included.sum()} included), {time.perf_counter() - start:.1f} s: "
          f"f-DP one-run {fdp:.3f} ({fdp / ours:.2f} of eps; goal >= 0.35), Steinke et al. {steinke:.3f} "
          f"(f-DP >= Steinke: {fdp >= steinke})\n")


def null_and_bug(args, probe, prv, rng):
    print("== 3. null test and planted half noise")
    start = time.perf_counter()
    positives = 0
    for _ in range(args.null_repeats):
        null = [probe.scores(0, args.null_trials, rng) for _ in (0, 1)]
        found = estimate_all(null[0], null[1], DELTA, methods=("clopper-pearson",))[0].epsilon
        positives += found > 0
    one_positives = 0
    for repeat in range(args.null_repeats):
        result = one_run_gradient_canaries(probe, 2000, args.seed + 1 + repeat, DELTA, inserted=False)
        one_positives += result.bound("one-run").epsilon > 0
    # each audit is positive with probability <= 5% under the null; P[Binom(n, 0.05) >= k] is printed
    tail = stats.binom.sf(positives - 1, args.null_repeats, 0.05) if positives else 1.0
    one_tail = stats.binom.sf(one_positives - 1, args.null_repeats, 0.05) if one_positives else 1.0
    print(f"canary never inserted, {args.null_repeats} multi-run audits of {args.null_trials} trials per world: "
          f"{positives} positive CP bounds (nominal <= 5%; P[>= that many] = {tail:.3f})")
    print(f"canary never inserted, {args.null_repeats} one-run audits of 2000 canaries: {one_positives} positive "
          f"Steinke bounds (P[>= that many] = {one_tail:.3f}); {time.perf_counter() - start:.1f} s")
    bug = get_probe("bug-dpsgd-half-noise", canaries_per_run=args.per_run)
    start = time.perf_counter()
    result = run_attack(bug, args.bug_trials, args.seed, claim_epsilon=prv, claim_delta=DELTA, delta=DELTA)
    best = result.best_rigorous()
    print(f"half noise behind opacus's back, claim {prv:.3f} (opacus PRV), {args.bug_trials} trials per world: "
          f"CP {best:.3f} -> {result.status} ({time.perf_counter() - start:.1f} s)")
    one_bug = one_run_gradient_canaries(bug, args.one_run_canaries, args.seed, DELTA)
    # Steinke et al.'s bound is rigorous at 95%: a bound above the claim rejects it at level 5%
    verdict = "VIOLATION" if one_bug.bound("one-run").epsilon > prv else "no violation shown"
    print(f"half noise, one-run ({args.one_run_canaries} canaries): Steinke {one_bug.bound('one-run').epsilon:.3f}, "
          f"f-DP {one_bug.bound('fdp-one-run').epsilon:.3f} -> {verdict}")


if __name__ == "__main__":
    raise SystemExit(main())
