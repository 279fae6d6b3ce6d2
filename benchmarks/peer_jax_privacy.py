"""Side by side with jax-privacy's auditor (``jax_privacy.auditing.CanaryScoreAuditor``, version 2.0.0) on
the SAME score files: our best rigorous bound, jax's best rigorous bound and their ratio per cell.

Scores are Gaussian: "out" N(0, 1), "in" N(mu, 1). Multi-run: n scores per world; one-run: m canaries,
each included with probability 1/2. Confidence 0.95 (significance 0.05), delta 1e-5, ``--seeds`` score
files per cell (figures are means over them; seeds 0..S-1 of ``numpy.random.default_rng([seed, cell])``).

Ours: multi-run ``clopper-pearson`` and ``clopper-pearson-split``; one-run ``one-run`` (Bonferroni over
12 guess counts) and ``one-run-split-median`` (rigorous), ``fdp-one-run`` and ``fdp-one-run-split-median``
(Gaussian f-DP). jax: ``epsilon_clopper_pearson`` (one- and two-sided) and ``epsilon_one_run`` /
``epsilon_one_run_fdp`` with the Bonferroni, Split(seed) and MultiSplit(seed) threshold strategies. The
best of each tool is the largest of its methods on that file (a comparison, not an estimator: a user
taking the larger of two bounds must correct for it, as ``dpaudit estimate``'s verdict does).

jax-privacy pulls jax: install it in its own virtualenv (``pip install -e '.[peer]'``). Without it the
script says so and exits 0.

    /work/peer-venv/bin/python benchmarks/peer_jax_privacy.py [--seeds 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# this folder holds a benchmarks/attacks.py that would shadow the attacks package
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import numpy as np  # noqa: E402

CONFIDENCE, DELTA = 0.95, 1e-5
MUS = (1.0, 2.0, 3.0)
MULTI_N = (1_000, 10_000, 100_000)
ONE_RUN_M = (1_000, 10_000)


def multi_run_cell(auditing, mu: float, n: int, seed: int) -> tuple[dict, dict]:
    from attacks.estimators import METHODS, estimate_all

    rng = np.random.default_rng([seed, int(mu * 10), n])
    out_scores, in_scores = rng.normal(0.0, 1.0, n), rng.normal(mu, 1.0, n)
    ours = {b.method: b.epsilon for b in estimate_all(out_scores, in_scores, DELTA, CONFIDENCE, methods=METHODS,
                                                      rng=seed) if b.rigorous}
    auditor = auditing.CanaryScoreAuditor(in_scores, out_scores)
    jax = {}
    for sided in (True, False):
        name = "one-sided" if sided else "two-sided"
        for label, strategy in (("bonferroni", auditing.Bonferroni()), ("split", auditing.Split(seed=seed)),
                                ("multisplit", auditing.MultiSplit(seed=seed))):
            jax[f"cp-{label}-{name}"] = float(auditor.epsilon_clopper_pearson(
                1 - CONFIDENCE, DELTA, sided, threshold_strategy=strategy))
    return ours, jax


def one_run_cell(auditing, mu: float, m: int, seed: int, multisplit: int) -> tuple[dict, dict, dict, dict]:
    from attacks.estimators import estimate_one_run
    from attacks.estimators.one_run_split import split_median_from_scores

    rng = np.random.default_rng([seed, int(mu * 10), m, 1])
    included = rng.random(m) < 0.5
    scores = rng.normal(mu * included, 1.0)
    rig, fdp = estimate_one_run(scores, included, DELTA, CONFIDENCE)
    ours_rig = {"one-run": rig.epsilon,
                "one-run-split-median": split_median_from_scores(scores, included, DELTA, CONFIDENCE).epsilon}
    ours_fdp = {"fdp-one-run": fdp.epsilon,
                "fdp-one-run-split-median": split_median_from_scores(scores, included, DELTA, CONFIDENCE,
                                                                     fdp=True).epsilon}
    auditor = auditing.CanaryScoreAuditor(scores[included], scores[~included])
    strategies = (("bonferroni", auditing.Bonferroni()), ("split", auditing.Split(seed=seed)),
                  ("multisplit", auditing.MultiSplit(num_samples=multisplit, seed=seed)))
    jax_rig = {f"one-run-{k}": float(auditor.epsilon_one_run(1 - CONFIDENCE, DELTA, threshold_strategy=s))
               for k, s in strategies}
    jax_fdp = {f"fdp-{k}": float(auditor.epsilon_one_run_fdp(1 - CONFIDENCE, DELTA, threshold_strategy=s))
               for k, s in strategies}
    return ours_rig, jax_rig, ours_fdp, jax_fdp


def mean_table(rows: list[tuple[dict, ...]]) -> list[dict]:
    """Per-method means over the seeds, for each of the dicts a cell returns."""
    return [{k: float(np.mean([r[i][k] for r in rows])) for k in rows[0][i]} for i in range(len(rows[0]))]


def show(label: str, ours: dict, jax: dict) -> str:
    best_ours, best_jax = max(ours.values()), max(jax.values())
    ratio = best_ours / best_jax if best_jax > 0 else float("inf") if best_ours > 0 else float("nan")
    detail = ", ".join(f"{k} {v:.3f}" for k, v in {**ours, **jax}.items())
    return f"{label:<26}{best_ours:>9.3f}{best_jax:>9.3f}{ratio:>8.3f}   {detail}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="score files per cell (default 3)")
    parser.add_argument("--multisplit", type=int, default=21, help="jax MultiSplit splits for one-run (default 21)")
    parser.add_argument("--quick", action="store_true", help="only n = 1e3 and m = 1e3")
    args = parser.parse_args(argv)
    try:
        import jax_privacy
        from jax_privacy import auditing
    except ImportError as exc:
        print(f"jax-privacy is not installed ({exc}); install the 'peer' extra in its own virtualenv to run this "
              "benchmark. Nothing measured.")
        return 0
    print(f"jax-privacy {jax_privacy.__version__}; confidence {CONFIDENCE}, delta {DELTA}, {args.seeds} seeds per "
          "cell (means); columns: ours best, jax best, ratio ours/jax, then every method's mean")
    header = f"{'cell':<26}{'ours':>9}{'jax':>9}{'ratio':>8}   methods"
    print("\nmulti-run, best rigorous (Clopper-Pearson family)\n" + header)
    for n in (MULTI_N[:1] if args.quick else MULTI_N):
        for mu in MUS:
            start = time.perf_counter()
            ours, jax = mean_table([multi_run_cell(auditing, mu, n, s) for s in range(args.seeds)])
            print(show(f"mu {mu:g}, n {n:.0e}", ours, jax) + f"   [{time.perf_counter() - start:.0f} s]",
                  flush=True)
    lines = {"rigorous": [], "f-DP": []}
    for m in (ONE_RUN_M[:1] if args.quick else ONE_RUN_M):
        for mu in MUS:
            start = time.perf_counter()
            o_rig, j_rig, o_fdp, j_fdp = mean_table([one_run_cell(auditing, mu, m, s, args.multisplit)
                                                     for s in range(args.seeds)])
            took = f"   [{time.perf_counter() - start:.0f} s]"
            lines["rigorous"].append(show(f"mu {mu:g}, m {m:.0e}", o_rig, j_rig) + took)
            lines["f-DP"].append(show(f"mu {mu:g}, m {m:.0e}", o_fdp, j_fdp) + took)
            print(f"(one-run mu {mu:g}, m {m:.0e} done{took.strip()})", file=sys.stderr, flush=True)
    for kind, rows in lines.items():
        print(f"\none-run, best {kind}\n" + header)
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
