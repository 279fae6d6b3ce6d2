"""Is the canaries' mean-shift estimate biased? ``configs/audit_flower.toml``'s set-up (the example app, 10 clients
and 40 canary SuperNodes, every node every round, 2 rounds, z = 2, C = 1) run by ``dpaudit flower`` on the
in-process grid (``tests/flower/inprocess_grid.py``: Flower's own app, strategy and canary mod, no Ray) at seeds
``--first`` .. ``--last - 1``; prints each seed's GDP ``mu`` estimate (final model, all iterates) with its standard
error and the measured shift, then the mean and spread of ``mu`` over the seeds against the exact ``mu`` of one
canary's sign, ``sqrt(2) * 2 / z = 1.414`` (the normalisation by the release's norm, which the clients' updates
and the other canaries enlarge a little, puts the expected value slightly below it).

    PYTHONPATH=$PWD python -P benchmarks/flower_canary_estimate.py [--first 0] [--last 30]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after the packages: benchmarks/accounting.py shadows

RUN_CONFIG = "num-server-rounds=2 clients-per-round=50 noise-multiplier=2.0 clipping-norm=1.0"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--last", type=int, default=30)
    args = parser.parse_args(argv)

    import flower_figures

    flower_figures.use_in_process_runtime()
    print("| seed | mu (final model) | stderr | mu (all iterates) | measured shift |")
    print("|---:|---:|---:|---:|---:|")
    mus, errors = [], []
    for seed in range(args.first, args.last):
        summary = flower_figures.run(["flower", "dpfed/flower/example_app", "--num-supernodes", "10", "--canaries",
                                      "40", "--run-config", RUN_CONFIG, "--seed", str(seed)])
        final, iterates = summary["estimates"]["final_model"], summary["estimates"]["all_iterates"]
        mus.append(final["mu"])
        errors.append(final["mu_stderr"])
        print(f"| {seed} | {final['mu']:.3f} | {final['mu_stderr']:.3f} | {iterates['mu']:.3f} | "
              f"{summary['measured_shift']['shift']:.3f} |", flush=True)
    exact = math.sqrt(2) * 2 / 2.0
    spread = statistics.stdev(mus)
    print(f"\n{len(mus)} seeds: mean mu {statistics.mean(mus):.3f} (its standard error "
          f"{spread / math.sqrt(len(mus)):.3f}), spread over seeds {spread:.3f}, mean reported stderr "
          f"{statistics.mean(errors):.3f}; exact mu {exact:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
