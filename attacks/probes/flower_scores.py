"""Scores of a Flower app's canary clients (``dpfed.flower.canary_mod``) and the estimates drawn from them.

Two threat models, one score each:

- final model: the cosine of ``u_j`` with the final model delta;
- all iterates: the cosine of ``u_j`` with ``V = sum_t D_t / |D_t|``, the sum of every round's normalised
  model delta ``D_t`` (equal to ``sum_t cos(u_j, D_t)`` divided by ``|V|``).

For a direction that was never inserted, ``u_j`` is independent of the deltas, so either score has the
closed-form null of a uniformly random unit vector in ``d`` dimensions:
``(cos + 1) / 2 ~ Beta((d-1)/2, (d-1)/2)`` (mean 0, variance 1/d).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from accounting.errors import ConfigurationError
from accounting.exact import gaussian_epsilon


def cosines(directions: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Cosine of each direction with the model delta (0 for a zero delta)."""
    delta = np.asarray(delta, dtype=float).ravel()
    norm = float(np.linalg.norm(delta))
    return directions @ delta / norm if norm > 0 else np.zeros(len(directions))


def all_iterates_direction(round_deltas) -> np.ndarray:
    """``V = sum_t D_t / |D_t|`` over the rounds' model deltas (zero deltas skipped)."""
    rows = [np.asarray(d, dtype=float).ravel() for d in round_deltas]
    if not rows:
        raise ConfigurationError("round_deltas", "no round deltas to score the canaries against")
    total = np.zeros_like(rows[0])
    for row in rows:
        norm = float(np.linalg.norm(row))
        if norm > 0:
            total += row / norm
    return total


def null_cosine_sf(value, dim: int):
    """P[cos > value] for a random unit vector in ``dim`` dimensions (the unseen canary's null)."""
    a = (dim - 1) / 2.0
    return stats.beta.sf((np.asarray(value, dtype=float) + 1.0) / 2.0, a, a)


def null_cosines(count: int, dim: int, rng) -> np.ndarray:
    """``count`` draws of the null cosine (for simulated null audits)."""
    a = (dim - 1) / 2.0
    return 2.0 * np.random.default_rng(rng).beta(a, a, size=count) - 1.0


def mean_shift_estimate(scores, signs, dim: int, delta: float) -> dict:
    """GDP estimate of the replace-one privacy loss from the signed canaries' cosines.

    In units of the closed-form null std ``1/sqrt(d)``, the scores of the ``+1`` and ``-1`` canaries are
    taken as two Gaussians of unit variance (the null's); their mean gap is the GDP ``mu`` of telling one
    sign from the other, and ``epsilon`` its tight (epsilon, delta) at ``delta``. An estimate, not a bound:
    it assumes Gaussian scores with the null's variance (other canaries' and clients' projections add
    variance and bias it low). ``mu_stderr``: the standard error of ``mu`` from the scores' spread."""
    scores = np.asarray(scores, dtype=float).ravel()
    signs = np.asarray(signs, dtype=float).ravel()
    if scores.size != signs.size or not np.all(np.isin(signs, (-1.0, 1.0))):
        raise ConfigurationError("signs", "needs one sign (+1 or -1) per canary score")
    plus, minus = scores[signs > 0] * np.sqrt(dim), scores[signs < 0] * np.sqrt(dim)
    if plus.size < 2 or minus.size < 2:
        return {"mu": 0.0, "mu_stderr": None, "epsilon": 0.0, "score_std": None, "null_std": 1 / np.sqrt(dim)}
    mu = float(plus.mean() - minus.mean())
    stderr = float(np.sqrt(plus.var(ddof=1) / plus.size + minus.var(ddof=1) / minus.size))
    return {"mu": mu, "mu_stderr": stderr, "epsilon": float(gaussian_epsilon(mu, delta)) if mu > 0 else 0.0,
            "score_std": float(np.sqrt((plus.var(ddof=1) + minus.var(ddof=1)) / 2)), "null_std": 1 / np.sqrt(dim),
            "assumptions": "scores of each sign Gaussian with the closed-form null's variance 1/d; mu = "
                           "sqrt(d) (mean score of +1 canaries - mean of -1 canaries); an estimate, not a bound"}


# --- the measured-shift estimate: each canary scored only in the rounds it took part in ----------------------
#
# Flower samples m of N clients a round, so a canary takes part in a fraction m/N of the rounds; scores that
# average over every round (both threat models above) dilute its shift by that fraction, and the accounted
# epsilon at a small delta comes from rare rounds no one-run audit observes. The auditor runs the canaries,
# so it knows from the transcript in which rounds each one replied. In such a round, in the canary's own
# direction, the released delta is the canary's contribution plus everything else; in units of |D_t|/sqrt(d)
# (the std of a random direction's projection: the noise plus the other clients' spread) the canary's
# signed score s_j sqrt(d) cos(u_j, D_t) has mean ``a``: how far one client's full-norm update moves the
# release, in noise stds (a = 1/z for correct noise, slightly less from the other clients' spread; more
# when less noise is added). The estimate is the epsilon of the replace-one pair the sampler realises
# (``accounting.replace_one_pair``) at the measured shift, the sampling rate and the number of releases the
# transcript shows: what the configuration spends at the noise the canaries measured.


def round_scores(directions: np.ndarray, signs: np.ndarray, round_deltas) -> np.ndarray:
    """``(k, T)`` signed scores ``s_j sqrt(d) cos(u_j, D_t)`` of every canary in every round."""
    dim = directions.shape[1]
    columns = [np.asarray(signs, float) * np.sqrt(dim) * cosines(directions, d) for d in round_deltas]
    return np.stack(columns, axis=1) if columns else np.zeros((len(directions), 0))


def measured_shift(scores: np.ndarray, took_part: np.ndarray) -> dict:
    """Mean signed score over the canary-rounds with ``took_part`` (``a``), and its standard error with the
    canaries as clusters (a canary's rounds share its direction, so they are not independent).

    Returns ``{"shift", "stderr", "canaries", "participations"}``; ``stderr`` is None with fewer than two
    canaries that took part."""
    scores, took_part = np.asarray(scores, float), np.asarray(took_part, bool)
    if scores.shape != took_part.shape:
        raise ConfigurationError("took_part", f"shape {took_part.shape} does not match the scores {scores.shape}")
    sums, counts = np.where(took_part, scores, 0.0).sum(axis=1), took_part.sum(axis=1)
    used = counts > 0
    clusters, total = int(used.sum()), int(counts.sum())
    if total == 0:
        return {"shift": 0.0, "stderr": None, "canaries": 0, "participations": 0}
    shift = float(sums.sum() / total)
    residuals = sums[used] - shift * counts[used]
    stderr = float(np.sqrt(clusters / (clusters - 1) * np.sum(residuals ** 2)) / total) if clusters > 1 else None
    return {"shift": shift, "stderr": stderr, "canaries": clusters, "participations": total}


def shift_lower_bound(shift: dict, confidence: float) -> float:
    """One-sided lower confidence bound on ``a`` (Student t over the canary clusters); 0 when not positive."""
    if shift["stderr"] is None:
        return 0.0
    low = shift["shift"] - float(stats.t.ppf(confidence, shift["canaries"] - 1)) * shift["stderr"]
    return max(0.0, low)


def measured_shift_epsilon(shift: float, rate: float, releases: int, delta: float) -> float:
    """Epsilon at ``delta`` of the replace-one pair the sampler realises, with per-round shift ``shift``
    (clipped at 0), sampled at ``rate`` over ``releases`` rounds (rounded down: ``accounting.replace_one_pair``)."""
    from accounting.replace_one_pair import worst_pair_epsilon

    return worst_pair_epsilon(rate, max(0.0, float(shift)), releases, delta, bound="lower")
