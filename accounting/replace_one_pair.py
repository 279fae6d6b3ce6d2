"""A replace-one pair that fixed-size sampling without replacement realises, and its exact privacy curve.

Take N clients, m sampled a round, Gaussian noise of std ``z C / m`` on the mean of their updates (each of
norm at most C). In dataset D client i sends ``+C u`` and every other client ``-C u``; in its neighbour D'
client i sends ``-C u`` too. In D' every round releases ``-C u`` plus noise; in D the same, except that with
probability ``q = m / N`` (client i sampled) the mean moves by ``2 C u / m``. In units of the noise std,
in direction u:

    P = (1 - q) N(0, 1) + q N(2a, 1)      Q = N(0, 1),      a = 1 / z,

independently in every round (and the other way round for D' against D). So the mechanism's epsilon
under replace-one is at least this pair's, composed over the rounds. Zhu, Dong and Wang (AISTATS 2022)
give ``(q P_0 + (1 - q) Q_0, Q_0)`` as the dominating pair of sampling without replacement under
replace-one, which would make it exact; we use it only as a lower bound, beside our RDP upper bound.

The pair in both orders is dp-accounting's Poisson-subsampled Gaussian under add/remove with noise std
``z / 2`` (sensitivity 1), which computes it. ``bound="lower"`` rounds every privacy loss down
(``pessimistic_estimate=False``, privacy buckets): a lower bound on the pair's epsilon, hence on the
mechanism's. ``bound="upper"`` rounds up (the pair's epsilon, not a bound on the mechanism's).
"""

from __future__ import annotations

from accounting.errors import ConfigurationError, require_number

LOSS_INTERVAL = 1e-3  # privacy-loss discretisation (the two roundings differ by about this per release)
MAX_SHIFT = 4.0  # beyond, the PLD grid costs seconds to minutes (measured: 13 s at 16, 113 s at 50) while
# epsilon is already in the hundreds; a lower bound taken at this shift stays a lower bound


def worst_pair_epsilon(rate: float, shift: float, releases: int, delta: float, bound: str = "lower") -> float:
    """Epsilon at ``delta`` of ``releases`` compositions of the pair above, sampled at ``rate``, where one
    client's full-norm update moves the mean by ``shift`` noise stds (``a = 1 / z``; the pair's gap is 2a);
    rounded as ``bound`` says; 0 when ``shift`` is 0. A lower bound beyond ``MAX_SHIFT`` is taken at
    ``MAX_SHIFT`` (epsilon increases with the shift); an upper one there is refused."""
    from dp_accounting import NeighboringRelation

    from accounting.pld_gaussian import gaussian_pld

    require_number("rate", rate, low=0, high=1, low_open=True)
    require_number("shift", shift, low=0)
    require_number("releases", releases, low=1, integer=True)
    require_number("delta", delta, low=0, high=1, low_open=True, high_open=True)
    if bound not in ("lower", "upper"):
        raise ConfigurationError("bound", f"expected 'lower' or 'upper', got {bound!r}")
    if shift == 0:
        return 0.0
    upper = bound == "upper"
    if shift > MAX_SHIFT:
        if upper:
            raise ConfigurationError("shift", f"{shift:g} noise stds a release is beyond {MAX_SHIFT:g}: the "
                                              "pair's PLD would take minutes (and epsilon is in the hundreds)")
        shift = MAX_SHIFT
    # dp-accounting's from_gaussian_mechanism (add-or-remove), its construction vectorised: the same distribution
    distribution = gaussian_pld(1.0 / (2.0 * float(shift)), LOSS_INTERVAL, float(rate),
                                NeighboringRelation.ADD_OR_REMOVE_ONE, pessimistic=upper)
    if int(releases) > 1:
        distribution = distribution.self_compose(int(releases))
    return max(0.0, float(distribution.get_epsilon_for_delta(delta)))
