# Peer (benchmark only, not a dependency):  pip install jax-privacy   (tested with jax-privacy 2.0.0)
"""Our estimators next to jax_privacy's ``CanaryScoreAuditor`` on the same scores, plus our speed.

Scenarios: the Gaussian mechanism (sensitivity 1) calibrated exactly to (epsilon, delta) with the
analytic noise multiplier, whose output is a likelihood-ratio-monotone score, and null worlds (both
worlds identical, true epsilon 0). For each we print both libraries' bounds side by side with their
time ratio. An independent reference column ("oracle CP") is computed with scipy alone: a single
Clopper-Pearson test at the threshold that is best for the *true* distributions (chosen without
looking at the data, so it needs no correction). If jax_privacy does not import, its columns say why
and only the scipy reference is shown.

    python benchmarks/attacks.py            # about a minute on 2 cores
    python benchmarks/attacks.py --quick    # smaller trial counts
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

# This file is named like the ``attacks`` package; when run as a script, keep its folder off the path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from accounting import analytic_gaussian_noise_multiplier, gaussian_epsilon  # noqa: E402
from attacks.estimators import (  # noqa: E402
    clopper_pearson_lower_bound,
    estimate_all,
    gdp_lower_bound,
    one_run_lower_bound,
)
from attacks.estimators.thresholds import _SORTED_CACHE  # noqa: E402
from attacks.roc import empirical_roc  # noqa: E402

try:
    from jax_privacy import auditing as peer

    PEER_ERROR = None
except Exception as exc:  # noqa: BLE001 - any import failure is reported, not raised
    peer, PEER_ERROR = None, f"{type(exc).__name__}: {exc}"

SIGNIFICANCE = 0.05


def timed(fn, *args, **kwargs):
    _SORTED_CACHE.clear()  # every method of ours pays for its own sort, as the peer's constructor does
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - start


def oracle_cp(out, inn, z, delta, mean_in=1.0):
    """Independent scipy reference: CP at the threshold best for the true Gaussians (no data used)."""
    n_out, n_in = out.size, inn.size
    grid = np.linspace(-2 * z, mean_in + 8 * z, 4000)
    fpr, tpr = stats.norm.sf(grid, 0, z), stats.norm.sf(grid, mean_in, z)
    fp_ub = stats.beta.ppf(1 - SIGNIFICANCE / 2, n_out * fpr + 1, n_out * (1 - fpr) + 1e-9)
    tp_lb = stats.beta.ppf(SIGNIFICANCE / 2, np.maximum(n_in * tpr, 1e-9), n_in * (1 - tpr) + 1)
    with np.errstate(all="ignore"):
        expected = np.nan_to_num(np.log((tp_lb - delta) / fp_ub), nan=-np.inf)
    t = grid[int(np.argmax(expected))]
    fp, tp = int(np.sum(out > t)), int(np.sum(inn > t))
    fp_ub = stats.beta.ppf(1 - SIGNIFICANCE / 2, fp + 1, n_out - fp) if fp < n_out else 1.0
    tp_lb = stats.beta.ppf(SIGNIFICANCE / 2, tp, n_in - tp + 1) if tp > 0 else 0.0
    return max(0.0, math.log((tp_lb - delta) / fp_ub)) if tp_lb > delta else 0.0


def compare_scores(label, out, inn, delta, true_eps, z=None):
    rows = []
    ours_cp, t_ours_cp = timed(clopper_pearson_lower_bound, out, inn, delta, 1 - SIGNIFICANCE)
    ours_split, t_ours_split = timed(
        clopper_pearson_lower_bound, out, inn, delta, 1 - SIGNIFICANCE, threshold_selection="split", rng=0
    )
    ours_gdp, t_ours_gdp = timed(gdp_lower_bound, out, inn, delta, 1 - SIGNIFICANCE)
    (_, _, ours_auc), t_ours_auc = timed(empirical_roc, out, inn)
    if peer is not None:
        auditor, t_init = timed(peer.CanaryScoreAuditor, inn, out)
        their_cp, t_cp = timed(auditor.epsilon_clopper_pearson, SIGNIFICANCE, delta, one_sided=False)
        their_split, t_split = timed(
            auditor.epsilon_clopper_pearson,
            SIGNIFICANCE,
            delta,
            one_sided=False,
            threshold_strategy=peer.Split(0.5, seed=0),
        )
        their_gdp, t_gdp = timed(auditor.epsilon_from_gdp, SIGNIFICANCE, delta)
        their_auc, t_auc = timed(auditor.attack_auroc)
        # Their constructor sorts and builds the threshold table once; charge it to every method.
        theirs = [
            (their_cp, t_cp + t_init),
            (their_split, t_split + t_init),
            (their_gdp, t_gdp + t_init),
            (their_auc, t_auc + t_init),
        ]
    else:
        theirs = [(None, None)] * 4
    ours = [
        (ours_cp.epsilon, t_ours_cp),
        (ours_split.epsilon, t_ours_split),
        (ours_gdp.epsilon, t_ours_gdp),
        (ours_auc, t_ours_auc),
    ]
    names = ["CP bonferroni", "CP split 50%", "GDP (model-based)", "AUC"]
    for name, (ov, ot), (tv, tt) in zip(names, ours, theirs, strict=True):
        rows.append((label, name, ov, tv, ot, tt))
    oracle = oracle_cp(out, inn, z, delta) if z is not None else float("nan")
    return rows, oracle, true_eps


def fmt(value, digits=3):
    return "-" if value is None else f"{value:.{digits}f}"


def print_rows(rows, oracle, true_eps):
    for label, name, ov, tv, ot, tt in rows:
        ratio = "-" if tt is None else f"{tt / ot:6.1f}x"
        their_ms = fmt(None if tt is None else tt * 1e3, 1)
        print(f"{label:<28} {name:<18} {fmt(ov):>8} {fmt(tv):>8}   {ot * 1e3:9.1f} {their_ms:>9}  {ratio:>8}")
    print(f"{'':<28} {'oracle CP (scipy)':<18} {fmt(oracle):>8}   true epsilon {true_eps:.3f}")


def one_run_table():
    print("\nOne-run (Steinke, Nasr, Jagielski 2023), bounds from counts (m canaries, r guesses, v correct):")
    print(f"{'m':>7} {'r':>6} {'v':>6} {'delta':>7} {'ours':>8} {'jax':>8}")
    for m, r, v, delta in [
        (1000, 100, 100, 1e-5),
        (10_000, 1000, 1000, 1e-5),
        (10_000, 10_000, 10_000, 1e-5),
        (100_000, 10_000, 10_000, 1e-5),
        (1000, 1000, 900, 1e-5),
        (1000, 1000, 750, 1e-5),
    ]:
        ours = one_run_lower_bound(m, r, v, delta, 1 - SIGNIFICANCE).epsilon
        theirs = peer._epsilon_one_run(0.0, m, r, v, SIGNIFICANCE, delta) if peer is not None else None
        print(f"{m:>7} {r:>6} {v:>6} {delta:>7.0e} {ours:>8.3f} {fmt(theirs):>8}")


def speed(trials):
    """Gaussian probe (numpy draws) + all default estimators + ROC at ``trials`` per world."""
    z = analytic_gaussian_noise_multiplier(2.0, 1e-5)
    rng = np.random.default_rng(0)
    cpu = time.process_time()
    start = time.perf_counter()
    out, inn = rng.normal(0.0, z, trials), rng.normal(1.0, z, trials)
    drawn = time.perf_counter()
    bounds = estimate_all(out, inn, 1e-5, rng=rng)
    estimated = time.perf_counter()
    empirical_roc(out, inn)
    done = time.perf_counter()
    print(
        f"\nSpeed, {trials:.0e} trials per world (eps = 2, delta = 1e-5): draws {drawn - start:.2f} s, "
        f"estimators {estimated - drawn:.2f} s, ROC/AUC {done - estimated:.2f} s, "
        f"total {done - start:.2f} s wall, {time.process_time() - cpu:.2f} s CPU; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    for b in bounds:
        print(f"  {b.method:<20} {b.epsilon:.3f}{'' if b.rigorous else '  (not rigorous)'}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    print(f"peer: {'jax_privacy.auditing' if peer is not None else 'NOT AVAILABLE - ' + PEER_ERROR}")
    print(f"confidence {1 - SIGNIFICANCE:.0%}; times in ms; ratio = peer time / our time\n")
    print(f"{'scenario':<28} {'method':<18} {'ours':>8} {'jax':>8}   {'ours ms':>9} {'jax ms':>9}  {'ratio':>8}")
    sizes = [10**4, 10**5] if args.quick else [10**4, 10**5, 10**6]
    for eps, delta in [(2.0, 1e-5), (1.0, 1e-5), (1.0, 0.1)]:
        z = analytic_gaussian_noise_multiplier(eps, delta)
        assert abs(gaussian_epsilon(1 / z, delta) - eps) < 1e-6
        for n in sizes:
            rng = np.random.default_rng(n)
            out, inn = rng.normal(0.0, z, n), rng.normal(1.0, z, n)
            print_rows(*compare_scores(f"Gaussian e={eps:g} d={delta:g} N={n:.0e}", out, inn, delta, eps, z))
    for n in sizes[:2]:
        rng = np.random.default_rng(7 + n)
        out, inn = rng.normal(size=n), rng.normal(size=n)
        rows, _, _ = compare_scores(f"null worlds N={n:.0e}", out, inn, 1e-5, 0.0)
        print_rows(rows, float("nan"), 0.0)
    one_run_table()
    speed(10**6 if args.quick else 10**7)


if __name__ == "__main__":
    main()
