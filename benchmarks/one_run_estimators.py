# Peer (benchmark only, not a dependency): pip install jax-privacy (tested with 2.0.0); or point
# JAX_PRIVACY_AUDITING at its jax_privacy/auditing.py (it needs only numpy, scipy and dp-accounting).
"""One-run estimators side by side in the ideal Gaussian setting (BENCHMARKS.md, "One-run estimators").

Each of k canaries is included independently with probability 1/2; its score is N(mu, 1) if included
and N(0, 1) if not, with mu such that the Gaussian mechanism is exactly (eps, 1e-5)-DP (the mu-GDP
profile, ``accounting.exact.gaussian_epsilon``). Our two estimators see the same scores and the same
guess rules ("in" for the top r/2 scores, "out" for the bottom r/2, about 12 values of r, Bonferroni
over them), at 95% confidence and delta = 1e-5; jax_privacy's ``epsilon_one_run`` and
``epsilon_one_run_fdp`` (one-sided, Bonferroni over every threshold) see the same scores. Cells are the
median over ``--reps`` seeds and the range. A second table reruns jax_privacy's own test scenario
(10,000 deterministic normal scores per side, shift 1, 2, 4, delta 1e-6) beside its expected values.

    PYTHONPATH=. python benchmarks/one_run_estimators.py [--reps 10]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import numpy as np  # noqa: E402
from scipy import optimize, stats  # noqa: E402

from accounting.exact import gaussian_epsilon  # noqa: E402
from attacks.estimators import fdp_one_run_from_scores, one_run_from_scores  # noqa: E402

DELTA = 1e-5
# jax_privacy 2.0.0, tests/auditing_test.py (test_epsilon_one_run_close): shift -> (one-run, f-DP).
JAX_TEST_FIGURES = {1: (1.13346, 2.164749), 2: (2.311945, 4.7218075), 4: (4.395568, 9.133752)}


def load_peer():
    """jax_privacy's auditing module, or None (the benchmark then shows our columns only)."""
    path = os.environ.get("JAX_PRIVACY_AUDITING")
    if path:
        spec = importlib.util.spec_from_file_location("jax_privacy_auditing", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    try:
        from jax_privacy import auditing
    except ImportError:
        return None
    return auditing


def mu_for(epsilon: float) -> float:
    return optimize.brentq(lambda mu: gaussian_epsilon(mu, DELTA) - epsilon, 1e-4, 60.0)


def bounds(scores, included, delta, peer) -> dict:
    out = {"steinke": one_run_from_scores(scores, included, delta, 0.95).epsilon,
           "fdp": fdp_one_run_from_scores(scores, included, delta, 0.95).epsilon}
    if peer is not None:
        auditor = peer.CanaryScoreAuditor(scores[included], scores[~included])
        out["jax steinke"] = auditor.epsilon_one_run(0.05, delta)
        out["jax fdp"] = auditor.epsilon_one_run_fdp(0.05, delta)
    return out


def cell(values) -> str:
    v = np.asarray(values)
    return f"{np.median(v):.2f} ({v.min():.2f}-{v.max():.2f})"


def ideal_table(reps: int, peer) -> None:
    names = ["steinke", "fdp"] + (["jax steinke", "jax fdp"] if peer is not None else [])
    print("| k | eps | mu | " + " | ".join(names) + " | f-DP / Steinke (ours) |")
    print("|---" * (len(names) + 4) + "|")
    for k in (1000, 10000):
        for epsilon in (1.0, 2.0, 4.0, 8.0):
            mu, values = mu_for(epsilon), {n: [] for n in names}
            for seed in range(reps):
                rng = np.random.default_rng([k, int(epsilon * 10), seed])
                included = rng.random(k) < 0.5
                for name, value in bounds(rng.normal(size=k) + mu * included, included, DELTA, peer).items():
                    values[name].append(value)
            s, f = np.median(values["steinke"]), np.median(values["fdp"])
            ratio = f"{f / s:.2f}" if s > 0 else "n/a"
            print(f"| {k} | {epsilon:g} | {mu:.3f} | " + " | ".join(cell(values[n]) for n in names) + f" | {ratio} |")


def jax_test_table(peer) -> None:
    print("\n| shift (mu) | jax_privacy test: one-run | ours: one-run | jax_privacy test: f-DP | ours: f-DP |")
    print("|---|---|---|---|---|")
    grid = (np.arange(10_000) + 0.5) / 10_000
    for shift, (jax_steinke, jax_fdp) in JAX_TEST_FIGURES.items():
        scores = np.r_[stats.norm.ppf(grid), stats.norm.ppf(grid) + shift]
        included = np.r_[np.zeros(10_000, bool), np.ones(10_000, bool)]
        ours = bounds(scores, included, 1e-6, None)
        print(f"| {shift} | {jax_steinke:.3f} | {ours['steinke']:.3f} | {jax_fdp:.3f} | {ours['fdp']:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    peer = load_peer()
    print(f"peer: {'jax_privacy.auditing' if peer is not None else 'not available (our columns only)'}\n")
    ideal_table(args.reps, peer)
    jax_test_table(peer)


if __name__ == "__main__":
    main()
