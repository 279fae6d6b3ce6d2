"""The accounting section of an audit: every accountant under every neighbouring relation and sampling
scheme that applies, epsilon over rounds, notes where accountants disagree, and the accountant's
trade-off curve (the best ROC any attack can reach) that reports draw under an empirical ROC.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import stats

from accounting import peers
from accounting.crosscheck import disagreements
from accounting.errors import ConfigurationError
from accounting.exact import composition_mu
from accounting.mechanisms import Composition, Neighbouring, Sampling, SubsampledGaussian
from accounting.registry import account_all
from reports.audit.model import AccountantRow, AccountingSection, Series, Unavailable


def describe(mechanism) -> str:
    """A readable one-line description of a mechanism (enums by their value, numbers short)."""
    parts = []
    for f in dataclasses.fields(mechanism):
        value = getattr(mechanism, f.name)
        if value is None:
            continue
        value = getattr(value, "value", value)
        parts.append(f"{f.name}={value:.6g}" if isinstance(value, float) else f"{f.name}={value}")
    return f"{type(mechanism).__name__}({', '.join(parts)})"


def _label(mechanism, relation: str = "add-remove") -> tuple[str, str]:
    if isinstance(mechanism, SubsampledGaussian):
        return mechanism.neighbouring.value, mechanism.sampling.value
    return relation, "none"


def variants(mechanism):
    """The mechanism under both neighbouring relations and both sampling schemes (where they apply)."""
    if not isinstance(mechanism, SubsampledGaussian):
        return [mechanism]
    out = []
    for relation in Neighbouring:
        for sampling in Sampling:
            if sampling is Sampling.FIXED_SIZE and mechanism.population is None:
                continue
            out.append(dataclasses.replace(mechanism, neighbouring=relation, sampling=sampling))
    return out


def _rows(mechanism, steps: int, delta: float, names, claimed: bool, relation: str) -> tuple[list, list]:
    neighbouring, sampling = _label(mechanism, relation)
    results = account_all(Composition.of(mechanism, steps), delta, names=names)
    rows = [
        AccountantRow(r.name, neighbouring, sampling, float(delta), r.epsilon, r.status, r.reason or "", claimed)
        for r in results
    ]
    return rows, results


def over_rounds(mechanism, steps: int, delta: float, names, points: int = 7) -> tuple[tuple, str | None]:
    """Epsilon at ``delta`` after t releases, for a few t up to ``steps``, per accountant
    (the series, or no series and the reason)."""
    if steps < 2:
        return (), "the mechanism releases once per unit of privacy: there is no growth over rounds to show"
    rounds = sorted({int(round(x)) for x in np.linspace(1, steps, min(points, steps))})
    series = []
    for name in names:
        values = []
        for t in rounds:
            result = account_all(Composition.of(mechanism, t), delta, names=[name])[0]
            values.append(result.epsilon if result.ok else None)
        if any(v is not None for v in values):
            series.append(Series(name, tuple(float(r) for r in rounds), tuple(values)))
    if not series:
        return (), "no accountant could analyse the mechanism round by round"
    return tuple(series), None


def _span_note(rows: list[AccountantRow]) -> list[str]:
    ok = [r for r in rows if r.claimed_setting and r.status == "ok" and math.isfinite(r.epsilon)]
    if len(ok) < 2:
        return []
    low, high = min(ok, key=lambda r: r.epsilon), max(ok, key=lambda r: r.epsilon)
    if high.epsilon <= 1.05 * low.epsilon:
        return []
    return [
        f"In the claimed setting the accountants span epsilon {low.epsilon:.4g} ({low.accountant}) to "
        f"{high.epsilon:.4g} ({high.accountant}): all are upper bounds, the smallest is the tightest valid one."
    ]


def accounting_section(target, names, rounds_names=("moments", "rdp", "pld"), rounds_points: int = 7):
    """Every accountant's epsilon at the claimed delta for each relation/sampling variant of the target's
    mechanism, the claimed setting at the target's reference delta, notes and epsilon over rounds."""
    claim, mechanism, steps = target.claim, target.mechanism, target.releases
    unaccountable = getattr(target, "unaccountable", None)  # a target whose mechanism no accountant of ours models
    if unaccountable:
        return Unavailable(unaccountable)
    if mechanism is None:
        return no_noise_section(target, names)
    reference_delta = target.spec.reference_delta
    rows, notes = [], []
    for variant in variants(mechanism):
        variant_rows, results = _rows(variant, steps, claim.delta, names, variant == mechanism, claim.neighbouring)
        rows += variant_rows
        neighbouring, sampling = _label(variant, claim.neighbouring)
        notes += [f"{neighbouring}, {sampling}: {n}" for n in disagreements(results)]
    at_reference = (
        []
        if math.isclose(reference_delta, claim.delta)
        else _rows(mechanism, steps, reference_delta, names, True, claim.neighbouring)[0]
    )
    notes += _span_note(rows)
    notes += [
        f"{r.accountant} failed for {r.neighbouring}, {r.sampling}: {r.reason}" for r in rows if r.status == "failed"
    ]
    valid_rounds = [n for n in rounds_names if n in names] or list(names)[:1]
    series, reason = over_rounds(mechanism, steps, claim.delta, valid_rounds, rounds_points)
    return AccountingSection(
        describe(mechanism),
        steps,
        tuple(rows),
        tuple(notes),
        float(reference_delta),
        tuple(at_reference),
        series,
        reason,
    )


NO_NOISE = "no noise"


def _no_noise_rows(names, claim, delta: float) -> tuple[AccountantRow, ...]:
    return tuple(
        AccountantRow(name, claim.neighbouring, "none", float(delta), math.inf, "ok", NO_NOISE, True) for name in names
    )


def no_noise_section(target, names) -> AccountingSection:
    """A target that adds no noise: every accountant's epsilon is infinite at every delta < 1 (the limit of
    vanishing noise; the canary's effect on the output is deterministic)."""
    claim, reference_delta = target.claim, target.spec.reference_delta
    return AccountingSection(
        NO_NOISE,
        target.releases,
        _no_noise_rows(names, claim, claim.delta),
        (),
        float(reference_delta),
        () if math.isclose(reference_delta, claim.delta) else _no_noise_rows(names, claim, reference_delta),
        (),
        "the run adds no noise: epsilon is infinite from its first release",
    )


def no_noise_tradeoff(fpr=None) -> Series:
    """Without noise a test separates the worlds perfectly: TPR = 1 at every FPR."""
    fpr = np.logspace(-7, 0, 120) if fpr is None else np.asarray(fpr, dtype=float)
    return Series("no noise: perfect test (TPR = 1)", tuple(fpr.tolist()), tuple(np.ones_like(fpr).tolist()))


def tradeoff_curve(mechanism, steps: int, fpr=None) -> Series | Unavailable:
    """Largest true-positive rate any test can reach at each false-positive rate (log-spaced grid).

    Gaussian compositions use the exact GDP curve TPR = Phi(Phi^-1(FPR) + mu). Others use the PLD
    privacy profile: TPR <= min over eps of min(e^eps FPR + delta(eps), 1 - e^-eps (1 - FPR - delta(eps))).
    """
    fpr = np.logspace(-7, 0, 120) if fpr is None else np.asarray(fpr, dtype=float)
    composition = Composition.of(mechanism, steps)
    try:
        mu = composition_mu(composition)
        tpr = stats.norm.cdf(stats.norm.ppf(fpr) + mu)
        return Series(f"exact trade-off bound (mu = {mu:.3g})", tuple(fpr.tolist()), tuple(tpr.tolist()))
    except Exception:  # not a plain Gaussian composition: use the PLD profile
        pass
    return profile_tradeoff(composition, fpr)


def profile_tradeoff(composition: Composition, fpr) -> Series | Unavailable:
    """Trade-off bound from the PLD privacy profile delta(eps) of ``composition`` (any mechanism dp-accounting
    analyses); conservative because the profile is an upper bound."""
    fpr = np.asarray(fpr, dtype=float)
    try:
        import dp_accounting
        from dp_accounting import pld

        relations = {m.neighbouring for m, _ in composition.parts if isinstance(m, SubsampledGaussian)}
        relation = (
            dp_accounting.NeighboringRelation.REPLACE_ONE
            if Neighbouring.REPLACE_ONE in relations
            else dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
        )
        accountant = pld.PLDAccountant(relation, 1e-3)
        accountant.compose(peers.to_dp_event(composition))
        eps = np.linspace(0.0, 40.0, 321)
        deltas = np.array([accountant.get_delta(float(e)) for e in eps])
    except Exception as exc:  # the report says why instead of drawing a made-up curve
        return Unavailable(f"no trade-off curve: {type(exc).__name__}: {exc}")
    e, d = eps[None, :], deltas[None, :]
    a = fpr[:, None]
    first = np.exp(e) * a + d
    second = 1.0 - np.exp(-e) * np.maximum(1.0 - a - d, 0.0)
    tpr = np.clip(np.minimum(first, second).min(axis=1), fpr, 1.0)
    return Series("PLD trade-off bound", tuple(fpr.tolist()), tuple(tpr.tolist()))


def gaussian_for(epsilon: float, delta: float, calibration: str):
    """The Gaussian mechanism a calibration formula gives for (epsilon, delta), sensitivity 1."""
    from accounting.calibration import calibrate_gaussian

    if calibration not in ("classic", "analytic"):
        raise ConfigurationError("calibration", f"unknown method {calibration!r}; choose classic or analytic")
    return calibrate_gaussian(epsilon, delta, 1.0, method=calibration)
