"""One Gaussian release's privacy-loss distribution: dp-accounting's ``from_gaussian_mechanism`` against
``accounting.pld_gaussian.gaussian_pld`` (the same construction, its inverse privacy losses vectorised), on the
configurations below, both in this process; prints each one's seconds (best of ``--repeat``), the ratio and whether
the two PMFs are equal bit for bit.

    python -P benchmarks/pld_construction.py [--repeat 3] [--interval 1e-4]
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np

# (noise multiplier, sampling probability, relation, pessimistic)
CONFIGURATIONS = [
    (1.0, 0.35, "ADD_OR_REMOVE_ONE", True),  # the default audit's DP-FTS-DE release
    (0.9, 0.3, "ADD_OR_REMOVE_ONE", True),
    (1.0, 0.35, "REPLACE_ONE", True),
    (1.0, 0.056, "ADD_OR_REMOVE_ONE", True),
    (0.7, 1.0, "ADD_OR_REMOVE_ONE", True),  # not subsampled
    (1.0, 0.3, "ADD_OR_REMOVE_ONE", False),  # optimistic: the lower bounds of accounting.replace_one_pair
]


def _best(function, repeat: int):
    best, value = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - start)
    return best, value


def _same(theirs, ours) -> bool:
    pairs = [(theirs._pmf_remove, ours._pmf_remove), (theirs._pmf_add, ours._pmf_add)]
    return all(type(a) is type(b) and all(
        np.array_equal(value, vars(b)[name]) if isinstance(value, np.ndarray) else value == vars(b)[name]
        for name, value in vars(a).items()) for a, b in pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--interval", type=float, default=1e-4)
    args = parser.parse_args()

    import dp_accounting
    from dp_accounting.pld.privacy_loss_distribution import from_gaussian_mechanism

    from accounting.pld_gaussian import gaussian_pld

    print("| z | q | relation | estimate | dp-accounting | ours | ratio | PMFs identical |")
    print("|---:|---:|---|---|---:|---:|---:|---|")
    for z, q, name, pessimistic in CONFIGURATIONS:
        relation = getattr(dp_accounting.NeighboringRelation, name)
        theirs_s, theirs = _best(functools.partial(
            from_gaussian_mechanism, z, value_discretization_interval=args.interval, sampling_prob=q,
            neighboring_relation=relation, pessimistic_estimate=pessimistic, use_connect_dots=pessimistic), args.repeat)
        ours_s, ours = _best(functools.partial(gaussian_pld, z, args.interval, q, relation, pessimistic=pessimistic),
                             args.repeat)
        kind = "pessimistic" if pessimistic else "optimistic"
        print(f"| {z} | {q} | {name.lower()} | {kind} | {theirs_s:.3f} s | {ours_s:.3f} s | "
              f"{theirs_s / ours_s:.1f}x | {'yes' if _same(theirs, ours) else 'NO'} |")


if __name__ == "__main__":
    main()
