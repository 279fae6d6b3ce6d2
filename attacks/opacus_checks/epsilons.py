"""Epsilons of what a DP-SGD loop really runs, from our accountants, beside opacus's own.

Every function returns ``(epsilon, how)`` where ``how`` says which analysis it is and whether it is
tight, an upper bound, or a lower bound. Noise multipliers are in units of ``max_grad_norm`` (C).

- Poisson sampling at rate q, add/remove: our ``pld`` accountant (tight up to discretisation).
- Shuffled or sequential batches (each record once per epoch): no amplification analysis of ours is
  valid; the valid upper bound is one Gaussian release per epoch under replace-one (sensitivity 2C),
  composed over epochs (``exact``). It is not tight: the true epsilon of shuffling lies between the
  Poisson and this bound (Chua et al. 2024). For reference, fixed-size batches drawn independently
  without replacement (replace-one, ``dpa-rdp``) are given too; that analysis is not valid for
  shuffled batches either, because they are dependent within an epoch.
- Draws with replacement (``WeightedRandomSampler``, ``RandomSampler(replacement=True)``): a batch of
  B draws holds the most exposed record K ~ Binomial(B, p_max) times; coupling each draw of that record
  with a draw of another record bounds the shift of the sum by 2KC, so the mixture of Gaussians with
  shifts 2k and weights Binomial(k; B, p_max) (dp-accounting's mixture PLD) is an upper bound.
- Normalisation by the realised batch size reveals it (opacus #571, #819): the release is then the
  batch size and the noisy sum together (exactly so as the model's dimension grows, #819). Its
  privacy-loss distribution is computed here from the two worlds' joint law on a grid of the sum
  (coarsening is post-processing, so this is at most that release's epsilon); at a finite dimension no
  accountant of ours is tight.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from accounting.base import run_accountant
from accounting.errors import ConfigurationError
from accounting.mechanisms import Composition, Gaussian, Neighbouring, Sampling, SubsampledGaussian
from accounting.registry import get_accountant

TIGHT, UPPER, REVEALED = "tight", "upper bound", "large-model limit"
TAIL_MASS = 1e-9  # with-replacement analysis: multiplicities beyond this total mass are charged to delta


def _ours(composition: Composition, accountant: str, delta: float) -> float:
    result = run_accountant(get_accountant(accountant), composition, delta=delta)
    if not result.ok:
        raise ConfigurationError("accountant", f"{accountant} cannot account this set-up: {result.reason}")
    return float(result.epsilon)


def opacus_epsilon(mechanism: str, noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """What opacus's accountant ``mechanism`` (rdp, prv, gdp) reports for these numbers."""
    from opacus.accountants import create_accountant

    accountant = create_accountant(mechanism=mechanism)
    accountant.history = [(float(noise_multiplier), float(sample_rate), int(steps))]
    return float(accountant.get_epsilon(delta=delta))


def poisson_epsilon(rate: float, noise_multiplier: float, steps: int, delta: float) -> tuple[float, str]:
    """Poisson subsampled Gaussian, add/remove, composed ``steps`` times (our PLD accountant)."""
    if rate >= 1.0:
        return _ours(Composition.of(Gaussian(noise_multiplier), steps), "exact", delta), \
            f"{TIGHT}: every record in every batch, Gaussian (exact)"
    mechanism = SubsampledGaussian(rate, noise_multiplier)
    return _ours(Composition.of(mechanism, steps), "pld", delta), \
        f"{TIGHT}: Poisson subsampled Gaussian at rate {rate:.4g}, add/remove (pld)"


def once_per_epoch_epsilon(noise_multiplier: float, epochs: int, delta: float) -> tuple[float, str]:
    """Each record in one batch per epoch: one Gaussian of sensitivity 2C per epoch (replace-one, exact)."""
    composition = Composition.of(Gaussian(noise_multiplier / 2.0), epochs)  # std z C, shift 2C: mu = 2 / z
    return _ours(composition, "exact", delta), \
        f"{UPPER}: each record once per epoch, one Gaussian of sensitivity 2C per epoch, replace-one (exact)"


def fixed_size_epsilon(batch: int, population: int, noise_multiplier: float, steps: int,
                       delta: float) -> tuple[float, str]:
    """Independent fixed-size batches without replacement, replace-one (dp-accounting's RDP)."""
    if batch >= population:
        return _ours(Composition.of(Gaussian(noise_multiplier / 2.0), steps), "exact", delta), \
            f"{UPPER}: whole-population batches, replace-one (exact)"
    mechanism = SubsampledGaussian(batch / population, noise_multiplier, sampling=Sampling.FIXED_SIZE,
                                   neighbouring=Neighbouring.REPLACE_ONE, population=population)
    return _ours(Composition.of(mechanism, steps), "dpa-rdp", delta), \
        "reference only: independent fixed-size batches without replacement, replace-one (dpa-rdp); not valid " \
        "for shuffled batches"


def with_replacement_epsilon(draws: int, max_probability: float, noise_multiplier: float, steps: int,
                             delta: float) -> tuple[float, str]:
    """Most exposed record drawn K ~ Binomial(draws, p) times per batch: mixture of shifts 2k (upper bound)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    ks = np.arange(draws + 1)
    tails = stats.binom.sf(ks, draws, max_probability)  # P(K > k)
    tail = TAIL_MASS / max(int(steps), 1)
    top = int(np.argmax(tails <= tail)) if np.any(tails <= tail) else draws
    probs = stats.binom.pmf(ks[: top + 1], draws, max_probability)
    probs = probs / probs.sum()  # conditioned on K <= top; the rest is charged to delta below
    distribution = pld.from_mixture_gaussian_mechanism(
        standard_deviation=float(noise_multiplier), sensitivities=[float(2 * k) for k in ks[: top + 1]],
        sampling_probs=[float(p) for p in probs], value_discretization_interval=5e-2)
    delta_left = delta - float(steps) * float(tails[top])
    if delta_left <= 0:
        raise ConfigurationError("delta", f"delta {delta} is below the truncation mass of the mixture analysis")
    delta = delta_left
    return float(distribution.self_compose(int(steps)).get_epsilon_for_delta(delta)), \
        f"{UPPER}: {draws} draws with replacement per batch, most exposed record drawn with probability " \
        f"{max_probability:.3g} per draw, shift 2C per copy (dp-accounting mixture PLD)"


def multiplicity_pld(copies: int, rate: float, noise_multiplier: float, pessimistic: bool = True,
                     interval: float = 1e-2):
    """dp-accounting's PLD of one noised sum (std z C) to which a record (or a group) adds its clipped gradient, of
    norm C and the same in each of its ``copies`` chances, j ~ Binomial(copies, rate) times: a mixture of Gaussians
    with shifts jC, add/remove (both directions). ``pessimistic``: rounded up on the grid (an upper bound of the true
    curve, tight up to about 1 % at the default grid), else dp-accounting's optimistic estimate (slow, and coarse at
    this grid over many steps)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    js = np.arange(int(copies) + 1)
    weights = stats.binom.pmf(js, int(copies), min(float(rate), 1.0))
    keep = weights > 0
    return pld.from_mixture_gaussian_mechanism(
        standard_deviation=float(noise_multiplier), sensitivities=[float(j) for j in js[keep]],
        sampling_probs=[float(w) for w in weights[keep]], pessimistic_estimate=pessimistic,
        value_discretization_interval=interval, use_connect_dots=pessimistic)


def multiplicity_interval(steps: int) -> float:
    """The grid of ``multiplicity_epsilon``: 1e-2 up to 300 steps, finer beyond (down to 1e-3 from 3000 steps), as
    the pessimistic rounding grows with the steps (at 1000 steps, z = 1, q = 0.01: 4 % above the truth at 1e-2,
    0.3 % at 3e-3)."""
    return min(1e-2, max(1e-3, 3.0 / max(int(steps), 1)))


def multiplicity_epsilon(parts, delta: float, pessimistic: bool = True, interval: float | None = None) -> float:
    """Epsilon of ``parts`` ``(copies, rate, noise multiplier, count)`` composed: each ``count`` steps of
    ``multiplicity_pld`` (dp-accounting's PLD composition; grid ``multiplicity_interval`` of the steps unless
    given)."""
    if interval is None:
        interval = multiplicity_interval(sum(int(count) for *_, count in parts))
    composed = None
    for copies, rate, noise_multiplier, count in parts:
        one = multiplicity_pld(copies, rate, noise_multiplier, pessimistic, interval).self_compose(int(count))
        composed = one if composed is None else composed.compose(one)
    return float(composed.get_epsilon_for_delta(delta))


def group_poisson_epsilon(copies: int, rate: float, noise_multiplier: float, steps: int,
                          delta: float) -> tuple[float, str]:
    """A group of ``copies`` records, each joining a Poisson batch independently at ``rate``, added or removed
    together: per step the sum shifts by jC with j ~ Binomial(copies, rate), a mixture of Gaussians
    (dp-accounting's pessimistic mixture PLD, both adjacencies, grid ``multiplicity_interval``: tight up to about
    1 %)."""
    if rate >= 1.0:
        return _ours(Composition.of(Gaussian(noise_multiplier / copies), steps), "exact", delta), \
            f"{TIGHT}: {copies} records in every batch, Gaussian of sensitivity {copies}C (exact)"
    return multiplicity_epsilon([(copies, rate, noise_multiplier, steps)], delta), \
        f"{TIGHT}: {copies} records each in a Poisson batch at rate {rate:.4g}, added or removed together " \
        "(dp-accounting mixture PLD)"


def _grid_masses(shift: float, std: float, edges: np.ndarray) -> np.ndarray:
    cdf = stats.norm.cdf(edges, loc=shift, scale=std)
    masses = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
    return masses


def revealed_batch_size_epsilon(population: int, rate: float, noise_multiplier: float, steps: int,
                                delta: float, bins_per_std: int = 8) -> tuple[float, str]:
    """Poisson at ``rate`` over ``population`` records with each batch's size released beside the noisy sum
    (normalisation by the realised batch size), per step: without the record, (Bin(N-1, q), N(0, z^2));
    with it, the same except that with probability q the size is one more and the sum shifted by C."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    z = float(noise_multiplier)
    others = population - 1
    ks = np.arange(others + 2)
    count0 = stats.binom.pmf(ks, others, rate)
    count_shift = np.concatenate([[0.0], count0[:-1]])
    keep = (count0 + count_shift) > 1e-14
    edges = np.arange(-8.0 * z, 1.0 + 8.0 * z, z / bins_per_std)
    y0 = _grid_masses(0.0, z, edges)
    y1 = _grid_masses(1.0, z, edges)
    lower, upper = {}, {}
    for k in ks[keep]:
        without = count0[k] * y0
        with_ = (1 - rate) * count0[k] * y0 + rate * count_shift[k] * y1
        for j in range(y0.size):
            if without[j] > 0:
                lower[(int(k), j)] = math.log(without[j])
            if with_[j] > 0:
                upper[(int(k), j)] = math.log(with_[j])
    distribution = pld.from_two_probability_mass_functions(lower, upper, value_discretization_interval=1e-3,
                                                           symmetric=False)
    return float(distribution.self_compose(int(steps)).get_epsilon_for_delta(delta)), \
        f"{REVEALED}: Poisson at rate {rate:.4g} with the batch size revealed beside the noisy sum (the limit of " \
        "large models, #819; computed on a grid of the sum, so at most that release's epsilon; at a finite model " \
        "dimension none of our accountants is tight)"


def accumulated_parts(steps: list[dict]) -> list[tuple[int, float, float, int]]:
    """``(batches, rate per batch, noise multiplier, count)`` of each observed step entry: ``accumulated`` Poisson
    batches (backward passes) per step, each at the entry's accounted rate over them (opacus multiplies its rate by
    the batches: ``sample_rate`` is that product)."""
    out = []
    for step in steps:
        k = max(1, int(step.get("accumulated", 1) or 1))
        q = 1.0 if step["sample_rate"] is None else float(step["sample_rate"])
        out.append((k, min(q / k, 1.0), float(step["noise_multiplier"]), int(step["count"])))
    return out


def any_record_epsilon(parts, delta: float) -> float:
    """Epsilon when nothing is known of how a record's gradients in the ``batches`` of one step align: it adds at
    most ``batches`` C whenever it is in one of them, a Poisson subsampled Gaussian of std z C / batches at rate
    1 - (1 - q)^batches (our ``pld``). An upper bound: the mixture of shifts of norm at most jC is a
    post-processing of it (Blackwell's ordering of Gaussian shifts, mixed over j)."""
    composition = Composition(tuple(
        (SubsampledGaussian(1.0 - (1.0 - q) ** k, z / k) if q < 1.0 else Gaussian(z / k), n) for k, q, z, n in parts))
    return _ours(composition, "pld", delta)


def one_batch_epsilon(parts, delta: float) -> float:
    """Each step's ``batches`` passes all on the one Poisson batch (rate q) drawn for it: a record in it adds at most
    ``batches`` C, a Poisson subsampled Gaussian of std z C / batches at rate q (our ``pld``; exact for a record whose
    clipped gradient is the same in each pass, an upper bound otherwise)."""
    composition = Composition(tuple(
        (SubsampledGaussian(q, z / k) if q < 1.0 else Gaussian(z / k), n) for k, q, z, n in parts))
    return _ours(composition, "pld", delta)


def unsampled_epsilon(parts, delta: float) -> float:
    """Epsilon with no amplification by sampling: each step a Gaussian of sensitivity ``batches`` C (std z C), composed
    (our ``exact``): an upper bound whatever batches a step's passes used, reused ones included."""
    return _ours(Composition(tuple((Gaussian(z / k), n) for k, _, z, n in parts)), "exact", delta)


def steps_epsilon(steps: list[dict], delta: float) -> dict:
    """``{"pld", "opacus_rdp", "steps"}`` of the private steps that ran (``dpfed.dpsgd.observe`` step entries:
    noise multiplier, sample rate, count, accumulated batches): each a Poisson subsampled Gaussian, add/remove,
    composed by our ``pld`` accountant (tight up to discretisation) and by opacus's RDP accountant over the same
    history. Where a step accumulated k > 1 Poisson batches (backward passes at the same parameters), a record is
    in j ~ Binomial(k, q) of them and adds its gradient j times: ``pld`` is then the mixture PLD of shifts jC
    (``multiplicity_epsilon``: tight up to discretisation for a record whose clipped gradient is the same in each
    batch), ``accounted_pld`` one Poisson draw at rate kq (what opacus accounts), ``accumulated`` the largest k, and,
    where parameters changed between the passes (``moved``), ``any_record_pld`` the bound whatever the directions."""
    from opacus.accountants import RDPAccountant

    parts, history = [], []
    for step in steps:
        z, q, n = float(step["noise_multiplier"]), step["sample_rate"], int(step["count"])
        q = 1.0 if q is None else float(q)
        parts.append((Gaussian(z) if q >= 1.0 else SubsampledGaussian(q, z), n))
        history.append((z, q, n))
    result = run_accountant(get_accountant("pld"), Composition(tuple(parts)), delta=delta)
    accountant = RDPAccountant()
    accountant.history = history
    out = {"pld": float(result.epsilon) if result.ok else float("inf"),
           "opacus_rdp": float(accountant.get_epsilon(delta=delta)), "steps": sum(n for _, _, n in history),
           "accumulated": 1}
    batches = accumulated_parts(steps)
    if any(k > 1 for k, _, _, _ in batches):
        out.update({"accounted_pld": out["pld"], "pld": multiplicity_epsilon(batches, delta),
                    "accumulated": max(k for k, _, _, _ in batches)})
        if any(s.get("moved") for s in steps):
            out["any_record_pld"] = any_record_epsilon(batches, delta)
    return out
