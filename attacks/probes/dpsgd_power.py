"""Power of the DP-SGD gradient-canary probes by simulation (the Gaussian-DP model is far too optimistic here).

A Dirac gradient canary's per-step update, in units of the noise the accountant is told, is ``b_t / z + f
N(0, 1)`` for an implementation adding a fraction ``f`` of the configured noise (``b_t`` ~ Bernoulli(q) in
the world with the canary, 0 without): the release the probes score, exactly (``dpfed.dpsgd.canaries``,
``attacks.probes.dpsgd_user``). This module draws those releases for ``trials`` canaries per world, scores
them as the probe does and runs the audit's estimator (Clopper-Pearson, Bonferroni over its rank grid) on
them, ``REPEATS`` times: the fraction of repeats whose lower bound exceeds the claim estimates the power.

Why not ``attacks.power``'s central-limit model: at small rates the per-step likelihood ratio is far from
Gaussian. On the digits example (q = 1/29, z = 1, 145 steps, claim 2.85) the model says 444 trials per
world refute half the noise with probability 0.9; the simulation (and the probe) needs about 7000.

A power is accepted only when at least ``ACCEPT`` of ``REPEATS`` repeats refute (so a true power of 0.9
passes with probability about 0.5 and one of 0.75 with probability below 0.01: the planned budgets err on
the large side); sampling stops early once too many repeats have failed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accounting.seeding import named_rng
from attacks.power import Power

REPEATS = 32
ACCEPT = 29  # of REPEATS: 0.906
GROWTH = 1.5
CHUNK = 4096  # canaries simulated at once (memory: steps x CHUNK doubles)


def _scores(rate: float, z: float, steps: int, fraction: float, trials: int, present: bool, rng, view: str):
    from attacks.probes.base import log_mixture_ratio

    mu = 1.0 / z
    out = np.empty(trials)
    for start in range(0, trials, CHUNK):
        n = min(CHUNK, trials - start)
        updates = fraction * rng.standard_normal((steps, n))
        if present:
            updates += (rng.random((steps, n)) < rate) * mu
        if view == "all-iterates":
            out[start:start + n] = log_mixture_ratio(updates * mu, mu * mu, rate).sum(axis=0)
        else:
            out[start:start + n] = updates.sum(axis=0)
    return out


def refutes(rate, z, steps, fraction, trials, claim_epsilon, delta, confidence, view="all-iterates",
            seed=0, repeats=REPEATS, accept=ACCEPT) -> tuple[bool, int, int]:
    """(accepted, refuting repeats, repeats run): whether an implementation adding ``fraction`` of the noise
    is refuted with simulated probability at least ``accept / repeats`` at ``trials`` per world."""
    from attacks.estimators.clopper_pearson import clopper_pearson_lower_bound

    hits = 0
    for r in range(repeats):
        rng = named_rng(seed, "dpsgd-power", view, fraction, trials, r)
        out = _scores(rate, z, steps, fraction, trials, False, rng, view)
        inn = _scores(rate, z, steps, fraction, trials, True, rng, view)
        hits += clopper_pearson_lower_bound(out, inn, delta, confidence).epsilon > claim_epsilon
        if (r + 1) - hits > repeats - accept:
            return False, hits, r + 1
    return True, hits, repeats


def half_noise_trials(rate, z, steps, claim_epsilon, delta, confidence, start: int, cap: int,
                      view="all-iterates", multiple: int = 1) -> int | None:
    """Fewest trials per world (on a grid growing by ``GROWTH`` from ``start``, in whole ``multiple``s) at which
    half the noise is refuted (``refutes``); None when ``cap`` trials do not."""
    trials = max(1, int(start))
    while True:
        trials = multiple * math.ceil(min(trials, cap) / multiple)
        if refutes(rate, z, steps, 0.5, trials, claim_epsilon, delta, confidence, view)[0]:
            return trials
        if trials >= cap:
            return None
        trials = int(trials * GROWTH)


def refuted_fraction(rate, z, steps, trials, claim_epsilon, delta, confidence, view="all-iterates") -> float:
    """Largest noise fraction on the grid 1.0, 0.9, ..., 0.1, 0.05 refuted at ``trials`` (``refutes``; a fraction
    that is not refuted stops early, so only the accepted one costs every repeat); 0 when none is."""
    for fraction in (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05):
        if refutes(rate, z, steps, fraction, trials, claim_epsilon, delta, confidence, view)[0]:
            return fraction
    return 0.0


@dataclass(frozen=True)
class SimulatedPower(Power):
    """A ``Power`` whose fraction comes from simulating the probe's own test (``half_noise_trials`` None:
    not searched; the fraction says whether half the noise is refuted at this budget)."""

    note: str = ""

    def sentence(self) -> str:
        if self.refuted_fraction <= 0:
            return (f"at {self.trials:.3g} trials per world this probe would not refute even an implementation "
                    f"adding 0.05 of the configured noise with probability {self.probability:g} ({self.note})")
        half = "refutes" if self.refuted_fraction >= 0.5 else "does not refute"
        return (f"would refute an implementation adding {self.refuted_fraction:.2f} of the configured noise or "
                f"less, with probability {self.probability:g}; it {half} half the noise ({self.note})")

    def to_dict(self) -> dict:
        out = super().to_dict()
        out.pop("note")
        return out


def simulated_power(probe, trials: int, claim_epsilon: float, delta: float, confidence: float, probability: float):
    """``SimulatedPower`` of a gradient-canary probe at ``trials`` per world (its own score's view)."""
    from attacks.power import reduce_composition

    setup = probe.training_setup()
    rate, z, steps = float(setup.sample_rate), float(setup.noise_multiplier), int(setup.steps)
    view = "last-iterate" if probe.name == "dpsgd-last-iterate" else "all-iterates"
    fraction = refuted_fraction(rate, z, steps, trials, claim_epsilon, delta, confidence, view)
    mu = reduce_composition(setup.mechanism()).mu
    note = (f"simulated {view} test, at least {ACCEPT} of {REPEATS} repeats refuting; the Gaussian-DP model "
            f"(mu {mu:.3g}) is too optimistic at rate {rate:.3g}")
    return SimulatedPower(int(trials), probability, fraction, None, "simulated", mu, note)
