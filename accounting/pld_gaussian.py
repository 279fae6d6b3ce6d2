"""dp-accounting's privacy-loss distribution of one (Poisson-subsampled) Gaussian release, built vectorised.

dp-accounting builds it (``from_gaussian_mechanism``) from the grid of privacy losses and inverts the privacy loss
at each grid point in a Python loop: about 2e5 points per adjacency at the 1e-4 interval, a second or more per
release; it was the costliest single step of our accounting and of our test suite. ``gaussian_pld`` makes the
same construction with one change: the inverse privacy losses of the whole grid are computed at once with numpy,
with dp-accounting's own formulas (``_inverse_losses``). Pessimistic (connect the dots, dp-accounting's default):
the grid, the divergences and the PMF are dp-accounting's own code, given a privacy-loss object whose
``get_delta_for_epsilon`` is vectorised. Optimistic (privacy buckets rounded down, ``_optimistic_buckets``): its
loop, restated over arrays. Both give dp-accounting's PMFs bit for bit on every configuration
``tests/accounting/test_pld_gaussian.py`` compares (5-10x faster); where dp-accounting lacks the internal function
this reuses, or for another relation, its public function is called.
"""

from __future__ import annotations

import collections
import math
import numbers

import numpy as np


def gaussian_pld(standard_deviation: float, interval: float, sampling_prob: float, relation, sensitivity: float = 1.0,
                 pessimistic: bool = True):
    """The PLD ``dp_accounting.pld.privacy_loss_distribution.from_gaussian_mechanism`` returns for these arguments
    (its default truncation; pessimistic: connect-the-dots, its default; optimistic: privacy buckets, rounding
    losses down, as it builds with ``pessimistic_estimate=False, use_connect_dots=False``), built with vectorised
    inverse privacy losses."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as pld_module
    from dp_accounting.pld.privacy_loss_mechanism import AdjacencyType

    build = getattr(pld_module, "_create_pld_pmf_from_monotone_privacy_loss", None)
    if build is None or relation not in (NeighboringRelation.ADD_OR_REMOVE_ONE, NeighboringRelation.REPLACE_ONE):
        return pld_module.from_gaussian_mechanism(
            standard_deviation, sensitivity=sensitivity, value_discretization_interval=interval,
            sampling_prob=sampling_prob, neighboring_relation=relation, pessimistic_estimate=pessimistic,
            use_connect_dots=pessimistic,
        )

    def one(adjacency):
        loss = _vectorised_loss_class()(standard_deviation, sensitivity=sensitivity, sampling_prob=sampling_prob,
                                        pessimistic_estimate=pessimistic, adjacency_type=adjacency)
        if not pessimistic:
            return _optimistic_buckets(loss, interval, AdjacencyType)
        return build(loss, pessimistic_estimate=True, value_discretization_interval=interval, use_connect_dots=True)

    if relation == NeighboringRelation.REPLACE_ONE:
        return pld_module.PrivacyLossDistribution(one(AdjacencyType.REPLACE))
    remove = one(AdjacencyType.REMOVE)
    if sampling_prob == 1.0:
        return pld_module.PrivacyLossDistribution(remove)
    return pld_module.PrivacyLossDistribution(remove, one(AdjacencyType.ADD))


_CLASS = None


def _vectorised_loss_class():
    """``_VectorisedGaussianLoss``, defined on first use (dp-accounting is imported only when accounting runs)."""
    global _CLASS
    if _CLASS is None:
        from dp_accounting.pld.privacy_loss_mechanism import AdjacencyType, GaussianPrivacyLoss

        class _VectorisedGaussianLoss(GaussianPrivacyLoss):
            """dp-accounting's Gaussian privacy loss whose ``get_delta_for_epsilon`` inverts the privacy loss for
            every epsilon at once (dp-accounting's method: one Python call per epsilon); the rest is dp-accounting's."""

            def get_delta_for_epsilon(self, epsilon):
                if isinstance(epsilon, numbers.Number):
                    return super().get_delta_for_epsilon(epsilon)
                epsilons = np.asarray(epsilon, dtype=float)
                deltas = np.zeros_like(epsilons)
                q = self.sampling_prob
                if q == 1.0 or self.adjacency_type == AdjacencyType.REPLACE:
                    inside = np.full(epsilons.shape, True)
                elif self.adjacency_type == AdjacencyType.ADD:
                    inside = epsilons < -math.log1p(-q)
                else:
                    inside = epsilons > math.log1p(-q)
                    deltas[~inside] = -np.expm1(epsilons[~inside])
                cutoffs = _inverse_losses(self, epsilons[inside], AdjacencyType)
                deltas[inside] = self.mu_upper_cdf(cutoffs) - np.exp(epsilons[inside] + self.mu_lower_log_cdf(cutoffs))
                return np.clip(deltas, 0, 1)

        _CLASS = _VectorisedGaussianLoss
    return _CLASS


def _inverse_losses(loss, epsilons: np.ndarray, adjacency_types) -> np.ndarray:
    """``loss.inverse_privacy_loss(e)`` for every ``e`` in ``epsilons`` (dp-accounting's formulas, vectorised);
    an epsilon where dp-accounting's own method raises or takes a special branch is handed to that method."""
    q, sensitivity, variance = loss.sampling_prob, loss.sensitivity, loss._standard_deviation ** 2
    kind = loss.adjacency_type
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if kind == adjacency_types.REPLACE:
            x, special = _inverse_replace(epsilons, q, sensitivity, loss._standard_deviation)
        elif q == 1.0:
            x, special = -0.5 * sensitivity - epsilons * variance / sensitivity, np.zeros(epsilons.shape, bool)
            if kind == adjacency_types.ADD:
                x = x + sensitivity
        else:
            sign = -1.0 if kind == adjacency_types.ADD else 1.0
            edge = sign * math.log(1 - q)  # dp-accounting's threshold (math.isclose to it: its own branch)
            special = np.abs(epsilons - edge) <= 1e-9 * np.maximum(np.abs(epsilons), abs(edge))
            without = sign * _log_a_exp_b_plus_c(1 / q, sign * epsilons, 1 - 1 / q)  # loss without subsampling
            special |= ~np.isfinite(without)
            x = -0.5 * sensitivity - without * variance / sensitivity
            if kind == adjacency_types.ADD:
                x = x + sensitivity
    for index in np.flatnonzero(special):
        x[index] = loss.inverse_privacy_loss(float(epsilons[index]))
    return x


def _optimistic_buckets(loss, interval: float, adjacency_types):
    """dp-accounting's privacy-buckets PMF of ``loss`` rounded down (``_create_pld_pmf_from_monotone_privacy_loss``
    with ``pessimistic_estimate=False``, ``use_connect_dots=False``), its loop over the grid's inverse points done
    at once: the same points, masses and additions in the same order."""
    from dp_accounting.pld import pld_pmf

    tail = loss.privacy_loss_tail()
    lower_x, upper_x = tail.lower_x_truncation, tail.upper_x_truncation
    masses = collections.defaultdict(lambda: 0)
    for privacy_loss, mass in tail.tail_probability_mass_function.items():
        if privacy_loss != math.inf:
            masses[math.floor(privacy_loss / interval)] += mass
    first = math.floor(loss.privacy_loss(lower_x) / interval)
    upper_loss = loss.privacy_loss(upper_x)
    xs, values = [lower_x], []
    if lower_x < upper_x:
        last = math.ceil(upper_loss / interval)  # at most one below the first value with interval * r <= upper_loss
        steps = np.arange(first, last - 3, -1)
        steps = steps[: int(np.argmax(interval * steps <= upper_loss)) + 1]  # the loop's last step: x = upper_x
        inner = _inverse_losses(loss, interval * steps[:-1], adjacency_types)
        beyond = np.flatnonzero(inner >= upper_x)  # the loop stops after the first point at or past upper_x
        if beyond.size:
            inner, steps = inner[: beyond[0] + 1], steps[: beyond[0] + 1]
            xs += inner.tolist()
        else:
            xs += inner.tolist() + [upper_x]
        values = steps.tolist()
    cdf = loss.mu_upper_cdf(xs)
    for value, mass in zip(values, cdf[1:] - cdf[:-1], strict=True):
        masses[value] += mass
    infinity_mass = tail.tail_probability_mass_function.get(math.inf, 0)
    return pld_pmf.create_pmf(dict(masses), interval, infinity_mass, pessimistic_estimate=False)


def _log_a_exp_b_plus_c(a: float, b: np.ndarray, c: float) -> np.ndarray:
    """dp-accounting's ``common.log_a_times_exp_b_plus_c`` for ``a > 0 > c`` (``1/q`` and ``1 - 1/q``), over an
    array of ``b``; where ``a exp(b) + c <= 0`` the result is nan (dp-accounting raises there)."""
    d = b + np.log(a)
    log_minus_c = np.log(-c)
    out = d + np.log1p(-np.exp(log_minus_c - d))
    out[~(log_minus_c < d)] = np.nan
    out[b == 0] = np.log(a + c)
    return out


def _inverse_replace(epsilons: np.ndarray, q: float, sensitivity: float, deviation: float):
    """dp-accounting's ``GaussianPrivacyLoss._inverse_privacy_loss_replace`` over an array (no special points)."""
    if q == 1.0:
        x = -epsilons * deviation ** 2 / sensitivity / 2
    else:
        magnitude = np.abs(epsilons)
        sign = np.where(epsilons >= 0, 1.0, -1.0)
        log_alpha = 0.5 * (sensitivity / deviation) ** 2 + math.log1p(-q) - math.log(q)
        half = magnitude / 2
        log_sinh = half + np.log1p(-np.exp(-2 * half)) - math.log(2)
        log_term = log_alpha + log_sinh  # asinh(-sign * exp(log_term)), as dp-accounting's common.asinh_exp
        asinh = -sign * np.logaddexp(0.5 * np.logaddexp(0, 2 * log_term), log_term)
        x = deviation ** 2 / sensitivity * (asinh - epsilons / 2)
    x = np.where(epsilons == 0, 0.0, x)
    return x, np.zeros(epsilons.shape, bool)
