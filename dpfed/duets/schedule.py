"""Epoch schedule and the seed's constants, with its inconsistencies kept selectable (notes A.3, A.6).

- Epoch lengths ``T_j = floor(sqrt(T T_{j-1}))`` from ``T_1``; an epoch communicates only if it ends
  before the horizon (the seed's "t > T" is an off-by-one: the agents stop at t >= T, A.4), so T = 50,
  T_1 = 2 gives T_j = 2, 10, 22, (33 cut off at t = 50): 3 communication rounds.
- delta' has three forms in the seed (A.6 item 1): ``section3`` (the garbled Sec. 3 form read as
  delta / (2 |U_T| (log(log N log T) + 4))), ``lemma4.2`` (log(log N + log T)) and ``appendix``
  (log log NT). Non-positive inner logarithms (N = 1 or tiny T) are floored at 0: the seed never says.
- p0 has two forms (A.6 item 2): ``section3`` 72 log(4NT/delta') and ``theorem4.1`` 72 log(4N/delta);
  the experiments use the number 10. The inclusion probability is min(1, p0 sigma_max^2) (ours).
- The epoch-count bound is stated two ways (A.6 item 3): ``epoch_count_bounds`` returns both.
"""

from __future__ import annotations

import math

DELTA_PRIME_FORMS = ("section3", "lemma4.2", "appendix")
P0_FORMS = ("section3", "theorem4.1")


def epoch_lengths(horizon: int, first: int) -> list[int]:
    """Lengths T_1, T_2, ... of all epochs that start before ``horizon`` (the last may be cut off)."""
    lengths, total, current = [], 0, int(first)
    while total < horizon:
        lengths.append(current)
        total += current
        current = max(1, math.isqrt(horizon * current))
    return lengths


def completed_epochs(horizon: int, first: int) -> int:
    """Number of epochs that end strictly before the horizon, i.e. communication rounds."""
    total, count = 0, 0
    for length in epoch_lengths(horizon, first):
        total += length
        count += total < horizon
    return count


def _log_pos(value: float) -> float:
    return math.log(value) if value > 1.0 else 0.0


def delta_prime(delta: float, agents: int, horizon: int, candidates: int, form: str = "lemma4.2") -> float:
    """The per-point confidence level delta' in the form ``form`` (see module docstring)."""
    n, t = max(agents, 1), max(horizon, 1)
    if form == "section3":
        inner = _log_pos(math.log(n) * math.log(t) if n > 1 and t > 1 else 0.0)
    elif form == "lemma4.2":
        inner = _log_pos(math.log(n) + math.log(t))
    else:
        inner = _log_pos(math.log(n * t))
    return delta / (2.0 * candidates * (inner + 4.0))


def p0_value(form: str | float, delta: float, agents: int, horizon: int, delta_p: float) -> float:
    """p0 as a number, or in one of the seed's two closed forms."""
    if form == "section3":
        return 72.0 * math.log(4.0 * agents * horizon / delta_p)
    if form == "theorem4.1":
        return 72.0 * math.log(4.0 * agents / delta)
    return float(form)


def theory_beta(rkhs_bound: float, noise_proxy: float, lam: float, delta_p: float) -> float:
    """beta(delta') = B + R sqrt((2 / lam) log(2 / delta')) (Lemma 2.5)."""
    return rkhs_bound + noise_proxy * math.sqrt(2.0 / lam * math.log(2.0 / delta_p))


def epoch_count_bounds(agents: int, horizon: int) -> dict[str, float]:
    """The seed's two bounds on the number of epochs: Lemma 4.4 and the proof of Theorem 4.1."""
    lemma = _log_pos(math.log(max(agents, horizon)) if max(agents, horizon) > 1 else 0.0) + 4
    proof = _log_pos(math.log(agents) * math.log(horizon) if agents > 1 and horizon > 1 else 0.0) + 4
    return {"lemma4.4": lemma, "theorem4.1-proof": proof}
