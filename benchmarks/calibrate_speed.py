"""`calibrate`'s noise search against the previous one (plain bisection from a fixed bracket), side by side.

The previous search is ``calibrate_noise_multiplier`` as it was at ``--baseline`` (a commit; its
``accounting/calibration.py`` is loaded from git into this process under another name), so both searches
call the same accountants here. For each case and accountant it prints the accountant evaluations and
seconds of each search, the ratio, both noise multipliers and whether each meets the target.

Run: python benchmarks/calibrate_speed.py [--baseline e8975e4] [--accountants pld,rdp,moments]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
ROOT = os.path.dirname(_HERE)

CASES = [  # (epsilon, delta, rate, steps): the README's example, DP-FTS-DE's published setting, full batches
    (2.0, 1e-5, 0.01, 1000),
    (15.17, 29**-1.1, 0.35, 60),
    (0.5, 1e-5, 0.1, 100),
    (8.0, 1e-6, 1.0, 100),
]


def baseline_search(commit: str):
    """``calibrate_noise_multiplier`` of ``commit``, loaded from git as module ``baseline_calibration``."""
    source = subprocess.run(
        ["git", "-C", ROOT, "show", f"{commit}:accounting/calibration.py"], check=True, capture_output=True, text=True
    ).stdout
    path = os.path.join(tempfile.mkdtemp(), "baseline_calibration.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(source)
    spec = importlib.util.spec_from_file_location("baseline_calibration", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module.calibrate_noise_multiplier


def timed(search, case, accountant) -> tuple[object, int, float]:
    counts = []
    start = time.perf_counter()
    result = search(*case, accountant, progress=lambda n, low, high: counts.append(n))
    return result, len(counts), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="e8975e4", help="commit holding the previous search")
    parser.add_argument("--accountants", default="pld,rdp,moments")
    args = parser.parse_args()
    from accounting.calibration import calibrate_noise_multiplier

    old_search = baseline_search(args.baseline)
    print(f"{'case (eps, delta, q, T)':34} {'acct':7} {'evals old/new':>13} {'s old':>7} {'s new':>7} "
          f"{'ratio':>6} {'z old':>9} {'z new':>9}  both meet")
    for case in CASES:
        for accountant in args.accountants.split(","):
            old, old_n, old_s = timed(old_search, case, accountant)
            new, new_n, new_s = timed(calibrate_noise_multiplier, case, accountant)
            meet = old.achieved_epsilon <= case[0] and new.achieved_epsilon <= case[0]
            label = f"({case[0]:g}, {case[1]:.3g}, {case[2]:g}, {case[3]})"
            print(f"{label:34} {accountant:7} {old_n:>6}/{new_n:<6} {old_s:7.2f} {new_s:7.2f} "
                  f"{old_s / new_s:6.2f} {old.noise_multiplier:9.5f} {new.noise_multiplier:9.5f}  {meet}")


if __name__ == "__main__":
    main()
