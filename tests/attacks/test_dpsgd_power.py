"""The simulated power of the DP-SGD gradient-canary probes (``attacks.probes.dpsgd_power``).

Seeds are fixed (``named_rng``), so each outcome is deterministic; the statements they check hold with the
probabilities given per test.
"""

from __future__ import annotations

from attacks.probes.dpsgd_power import refutes

RATE, Z, STEPS, CLAIM, DELTA = 0.5, 2.0, 10, 4.0, 1e-5  # PLD: epsilon 3.96 at z 2 (the claim holds)


def test_correct_noise_is_not_refuted():
    """Null world (the configured noise, a claim that holds): each simulated audit refutes with probability
    at most 1 - confidence = 0.05, so none of 8 refuting has probability above 0.66 and at most 3 of 8 above
    0.9995."""
    accepted, hits, runs = refutes(RATE, Z, STEPS, 1.0, 2000, CLAIM, DELTA, 0.95, repeats=8, accept=8)
    assert not accepted and hits <= 3


def test_a_tenth_of_the_noise_is_refuted():
    """A tenth of the noise (the canary's update 10 standard deviations when sampled): the estimator's
    ceiling at 2000 trials per world is 5.55 > 4, reached by every repeat (a canary never sampled in 10
    steps: 1 in 1024)."""
    accepted, hits, runs = refutes(RATE, Z, STEPS, 0.1, 2000, CLAIM, DELTA, 0.95, repeats=8, accept=8)
    assert accepted and hits == runs == 8
