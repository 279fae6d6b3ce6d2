"""True against reported epsilon under gradient accumulation (BENCHMARKS.md, "Gradient accumulation: true against
reported epsilon").

opacus's ``allow_grad_accumulation`` lets a training sum k Poisson batches (rate q each) into one optimizer step at
the same parameters: a record in j ~ Binomial(k, q) of them adds its clipped gradient j times to the noised sum, so
each step is a mixture of Gaussians with shifts 0, C, ..., kC. opacus accounts the step as one Poisson draw at rate
kq. For each (k, q, z, steps) this prints:

- true: the mixture's epsilon (``attacks.opacus_checks.epsilons.multiplicity_epsilon``: dp-accounting's mixture PLD,
  pessimistic, grid 1e-2, composed over the steps), add/remove, at delta 1e-5;
- check: dp-accounting's ``MixtureOfGaussiansDpEvent`` composed by its ``PLDAccountant`` at a finer grid
  (``--check`` rows only: slow);
- reported: opacus's PRV and RDP accountants with the history opacus records (rate kq, the steps), and our PLD of
  that Poisson subsampled Gaussian;
- true / PRV.

    PYTHONPATH=. python -P benchmarks/accumulation_epsilon.py [--check]
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

from attacks.opacus_checks import epsilons as eps

DELTA = 1e-5
CASES = [  # (k batches per step, q per batch, noise multiplier z, steps)
    (4, 1 / 8, 1.0, 4),  # the reference case: 256 records, batch 32, 4 batches a step, 2 epochs
    (1, 0.01, 1.0, 1000),  # no accumulation: the control, true = reported
    (2, 0.01, 1.0, 1000),
    (4, 0.01, 1.0, 1000),
    (8, 0.01, 1.0, 1000),
    (4, 0.004, 0.8, 2500),
    (4, 0.05, 2.0, 200),
    (2, 0.25, 1.0, 8),
    (8, 1 / 16, 1.0, 16),
    (16, 0.002, 1.0, 500),
]
CHECKED = {(4, 1 / 8, 1.0, 4), (4, 0.05, 2.0, 200)}


def dp_accounting_mixture(k: int, q: float, z: float, steps: int, interval: float = 3e-3) -> float:
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    js = np.arange(k + 1)
    event = dp_event.MixtureOfGaussiansDpEvent(z, [float(j) for j in js], [float(w) for w in stats.binom.pmf(js, k, q)])
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
    accountant.compose(event, steps)
    return float(accountant.get_epsilon(DELTA))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="cross-check two rows with dp-accounting's own event")
    args = parser.parse_args()
    print(f"delta {DELTA}, add/remove; opacus accounts rate kq")
    print("| k | q | z | steps | true (mixture PLD) | check | opacus PRV (kq) | opacus RDP (kq) | our PLD (kq) "
          "| true / PRV |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k, q, z, steps in CASES:
        true = eps.multiplicity_epsilon([(k, q, z, steps)], DELTA)
        check = f"{dp_accounting_mixture(k, q, z, steps):.3f}" if args.check and (k, q, z, steps) in CHECKED else ""
        prv = eps.opacus_epsilon("prv", z, k * q, steps, DELTA)
        rdp = eps.opacus_epsilon("rdp", z, k * q, steps, DELTA)
        ours, _ = eps.poisson_epsilon(k * q, z, steps, DELTA)
        print(f"| {k} | {q:.4g} | {z:g} | {steps} | {true:.3f} | {check} | {prv:.3f} | {rdp:.3f} | {ours:.3f} "
              f"| {true / prv:.2f}x |")


if __name__ == "__main__":
    main()
