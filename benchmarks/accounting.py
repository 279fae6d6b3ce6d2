"""Accountants side by side in one process: opacus (RDP, PRV), dp-accounting (RDP, PLD) and ours.

Prints epsilon and time for (1) one epsilon per configuration and (2) an epsilon-over-steps curve
of 1,000 points up to 10^5 steps, with time ratios against our ``rdp``. Each timing is the median of
``--repeats`` interleaved runs (the machine is noisy: read the ratios, not the seconds).

For the curve every peer is used in its fastest honest way: RDP peers compute the per-step RDP
once and convert for each step count through their own conversion function; PLD and PRV must
compose anew for every step count, so they are timed on ``--tight-points`` evenly spread points and
the time is scaled to 1,000 points (marked "extrapolated").

    python benchmarks/accounting.py [--repeats 5] [--tight-points 4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

# Running `python benchmarks/accounting.py` puts this folder first on sys.path, where this very file
# would shadow the `accounting` package.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]

import numpy as np  # noqa: E402

warnings.filterwarnings("ignore")

CONFIGS = [  # (label, q, z, steps, delta)
    ("DP-FTS-DE landmine", 0.35, 1.0, 60, 29**-1.1),
    ("Abadi et al. MNIST-like", 0.01, 1.0, 10_000, 1e-5),
    ("DP-SGD 60 epochs", 256 / 60_000, 1.1, 14_100, 1e-5),
]
CURVE_CONFIG = ("curve q=0.01 z=1", 0.01, 1.0, None, 1e-5)
CURVE_STEPS = np.unique(np.linspace(100, 100_000, 1000).astype(int))


def ours_rdp(q, z, steps, delta):
    from accounting import Composition, SubsampledGaussian
    from accounting.rdp import RdpAccountant

    return RdpAccountant().epsilon(Composition.of(SubsampledGaussian(q, z), steps), delta)


def opacus_rdp(q, z, steps, delta):
    from opacus.accountants import RDPAccountant

    accountant = RDPAccountant()
    accountant.history = [(z, q, steps)]
    return accountant.get_epsilon(delta)


def opacus_prv(q, z, steps, delta):
    from opacus.accountants import PRVAccountant

    accountant = PRVAccountant()
    accountant.history = [(z, q, steps)]
    return accountant.get_epsilon(delta, eps_error=0.01)


def _event(q, z, steps):
    import dp_accounting

    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), steps
    )


def dpa_rdp(q, z, steps, delta):
    import logging

    from dp_accounting import rdp

    logging.disable(logging.WARNING)
    accountant = rdp.RdpAccountant()
    accountant.compose(_event(q, z, steps))
    return accountant.get_epsilon(delta)


def dpa_pld(q, z, steps, delta):
    from dp_accounting import pld

    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(_event(q, z, steps))
    return accountant.get_epsilon(delta)


# ----- curves ---------------------------------------------------------------------------------
def ours_curve(q, z, steps, delta):
    from accounting import SubsampledGaussian
    from accounting.rdp import epsilon_curve

    return epsilon_curve(SubsampledGaussian(q, z), steps, delta)


def opacus_rdp_curve(q, z, steps, delta):
    from opacus.accountants.analysis import rdp

    orders = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
    per_step = rdp.compute_rdp(q=q, noise_multiplier=z, steps=1, orders=orders)
    return np.array([rdp.get_privacy_spent(orders=orders, rdp=per_step * t, delta=delta)[0] for t in steps])


def dpa_rdp_curve(q, z, steps, delta):
    import logging

    from dp_accounting import rdp
    from dp_accounting.rdp import rdp_privacy_accountant as module

    logging.disable(logging.WARNING)
    accountant = rdp.RdpAccountant()
    accountant.compose(_event(q, z, 1))
    orders, per_step = accountant._orders, accountant._rdp  # its per-step RDP, computed once
    return np.array([module.compute_epsilon(orders, per_step * t, delta)[0] for t in steps])


def pointwise(function):
    def curve(q, z, steps, delta):
        return np.array([function(q, z, int(t), delta) for t in steps])

    return curve


SINGLE = [
    ("ours rdp", ours_rdp),
    ("opacus RDP", opacus_rdp),
    ("dp-accounting RDP", dpa_rdp),
    ("dp-accounting PLD", dpa_pld),
    ("opacus PRV", opacus_prv),
]
CURVES = [
    ("ours rdp", ours_curve, False),
    ("opacus RDP", opacus_rdp_curve, False),
    ("dp-accounting RDP", dpa_rdp_curve, False),
    ("dp-accounting PLD", pointwise(dpa_pld), True),
    ("opacus PRV", pointwise(opacus_prv), True),
]


def timed(function, *args):
    start = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - start


def bench_single(repeats: int) -> None:
    print(f"== one epsilon per configuration (median of {repeats} runs; ratio = peer time / ours)")
    for label, q, z, steps, delta in CONFIGS:
        times = {name: [] for name, _ in SINGLE}
        values = {}
        for _ in range(repeats):
            for name, function in SINGLE:  # interleaved so load spikes hit everyone alike
                values[name], seconds = timed(function, q, z, steps, delta)
                times[name].append(seconds)
        ours = statistics.median(times["ours rdp"])
        print(f"-- {label}: q={q:.4g} z={z} T={steps} delta={delta:.3g}")
        for name, _ in SINGLE:
            t = statistics.median(times[name])
            print(f"   {name:18s} eps={values[name]:9.4f}  {t * 1e3:9.2f} ms  ratio {t / ours:8.1f}x")


def bench_curve(repeats: int, tight_points: int) -> None:
    label, q, z, _, delta = CURVE_CONFIG
    print(f"== epsilon over steps: {len(CURVE_STEPS)} points up to {CURVE_STEPS[-1]} ({label}, delta={delta:g})")
    subset = CURVE_STEPS[np.linspace(0, len(CURVE_STEPS) - 1, tight_points).astype(int)]
    reference = ours_curve(q, z, CURVE_STEPS, delta)
    rows = []
    for name, function, extrapolate in CURVES:
        steps = subset if extrapolate else CURVE_STEPS
        runs = [timed(function, q, z, steps, delta) for _ in range(1 if extrapolate else repeats)]
        values, seconds = runs[-1][0], statistics.median(r[1] for r in runs)
        if extrapolate:
            seconds *= len(CURVE_STEPS) / len(subset)
        ours_at = reference[np.searchsorted(CURVE_STEPS, steps)]
        rows.append((name, seconds, float(values[-1]), float(np.max(values - ours_at)), extrapolate))
    ours = rows[0][1]
    fastest_peer = min(r[1] for r in rows[1:])
    for name, seconds, last, gap, extrapolate in rows:
        note = " (extrapolated)" if extrapolate else ""
        print(
            f"   {name:18s} eps(T=1e5)={last:8.4f}  max(peer - ours)={gap:+.4f}  "
            f"{seconds:9.3f} s{note}  ratio {seconds / ours:9.1f}x"
        )
    print(f"   fastest peer / ours on the curve: {fastest_peer / ours:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tight-points", type=int, default=4)
    args = parser.parse_args()
    for _, function in SINGLE:  # warm imports and caches outside the timings
        function(0.1, 1.0, 10, 1e-5)
    bench_single(args.repeats)
    bench_curve(args.repeats, args.tight_points)


if __name__ == "__main__":
    main()
