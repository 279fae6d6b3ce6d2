"""Accountant cost guard: wall and CPU seconds of `dpaudit account` with every accountant (defaults) on
the configurations of tests/test_bad_inputs.py and the presets, and the PLD of the k-fold composition
against the one-Gaussian path on the same configurations (same process, side by side).

    PYTHONPATH=$PWD python benchmarks/accountant_cost.py [--slow-path-steps 1000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time

# benchmarks/accounting.py would shadow the ``accounting`` package when this directory leads sys.path
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

from accounting import pld as pld_module  # noqa: E402
from accounting.mechanisms import Composition, SubsampledGaussian  # noqa: E402
from reports.cli import main  # noqa: E402

CONFIGS = [  # (label, account flags)
    ("bad inputs: q 0.35, z 1, T 60", ["--rate", "0.35", "--noise", "1", "--steps", "60", "--delta", "1e-5"]),
    (
        "bad inputs: fixed-size 10/29, replace-one, T 60",
        ["--rate", "0.35", "--noise", "1", "--steps", "60", "--delta", "0.0246236", "--sampling", "fixed-size",
         "--population", "29", "--neighbouring", "replace-one"],
    ),
    ("bad inputs: z 1e-300, T 1", ["--rate", "1", "--noise", "1e-300", "--steps", "1", "--delta", "1e-5"]),
    ("preset fts synthetic: q 0.35, z 1, T 30", ["--rate", "0.35", "--noise", "1", "--steps", "30", "--delta", "1e-5"]),
    ("presets fts landmine/svm: T 60", ["--rate", "0.35", "--noise", "1", "--steps", "60", "--delta", "0.0246"]),
    ("dp-fedzero default: q 1, z 1, T 10^4", ["--rate", "1", "--noise", "1", "--steps", "10000", "--delta", "1e-5"]),
]


def timed(call):
    wall, cpu = time.perf_counter(), time.process_time()
    value = call()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def account_row(label, flags):
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        code, wall, cpu = timed(lambda: main(["account", *flags]))
    return f"| {label} | {code} | {wall:.1f} | {cpu:.1f} |"


def pld_side_by_side(steps: int, delta: float = 1e-5):
    composition = Composition.of(SubsampledGaussian(1.0, 1.0, 1.0), steps)
    engine = pld_module.PldAccountant()
    fast, fwall, fcpu = timed(lambda: engine.epsilon(composition, delta))
    interval = pld_module.discretisation_interval(composition)
    slow, swall, scpu = timed(lambda: pld_module._accountant(composition, interval).get_epsilon(delta))
    return f"| {steps} | {slow:.9g} | {swall:.1f} / {scpu:.1f} | {fast:.9g} | {fwall:.2f} / {fcpu:.2f} |"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--slow-path-steps", type=int, nargs="*", default=[10, 100, 1000])
    args = parser.parse_args()
    print("| configuration (`dpaudit account`, all accountants) | exit | wall s | CPU s (this process) |")
    print("|---|---|---|---|")
    for label, flags in CONFIGS:
        print(account_row(label, flags), flush=True)
    print()
    print("| steps (q 1, z 1) | k-fold PLD epsilon | wall / CPU s | one-Gaussian PLD epsilon | wall / CPU s |")
    print("|---|---|---|---|---|")
    for steps in args.slow_path_steps:
        print(pld_side_by_side(steps), flush=True)
