"""Epsilon over release counts with PLD: dp-accounting's PLDAccountant per count vs ``accounting.pld``, which
builds one Poisson-subsampled Gaussian release's PLD once and self-composes it per count (as an audit's
"epsilon over rounds" asks: 7 counts of one mechanism). Both in this process, same counts; prints the seconds,
their ratio and whether every epsilon agrees bit for bit.

    python -P benchmarks/pld_over_counts.py [--rate 0.3] [--noise 0.9] [--steps 60]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=0.3)
    parser.add_argument("--noise", type=float, default=0.9)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--delta", type=float, default=1e-5)
    args = parser.parse_args()

    import dp_accounting

    from accounting import pld as ours
    from accounting.mechanisms import Composition, SubsampledGaussian
    from accounting.peers import PeerScale, composition_relation, dp_event, dpa_relation

    mechanism = SubsampledGaussian(args.rate, args.noise)
    counts = sorted({int(round(x)) for x in np.linspace(1, args.steps, 7)})

    start = time.perf_counter()
    reference = []
    for count in counts:
        composition = Composition.of(mechanism, count)
        relation = composition_relation(composition)
        accountant = dp_accounting.pld.PLDAccountant(dpa_relation(relation), ours.discretisation_interval(composition))
        accountant.compose(dp_event(composition, PeerScale.RECORD_NORM, relation))
        reference.append(accountant.get_epsilon(args.delta))
    theirs = time.perf_counter() - start

    start = time.perf_counter()
    shared = [ours.PldAccountant().epsilon(Composition.of(mechanism, count), args.delta) for count in counts]
    mine = time.perf_counter() - start

    print(f"q = {args.rate}, z = {args.noise}, counts {counts}, delta {args.delta}")
    print(f"dp-accounting PLDAccountant per count: {theirs:.2f} s")
    print(f"accounting.pld (one release's PLD shared): {mine:.2f} s")
    print(f"ratio: {theirs / mine:.1f}x; epsilons identical: {reference == shared}")


if __name__ == "__main__":
    main()
