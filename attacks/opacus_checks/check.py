"""Sampler against accountant: what an opacus set-up runs, accounted beside what opacus's accountant was
told, as findings with corrected epsilons.

Told: the noise multiplier and sample rate the accountant's step hook records, and the steps of the claim
(``accounted_steps``, ``accounted_epochs / sample_rate`` as ``make_private_with_epsilon`` computes them,
or, when neither is given, the steps the loop runs: an assumption, said as the ``steps-assumed`` finding).
Also: parameters the model trains outside the private optimizer (``parameters``) and identical records
(``records``: the guarantee is per record). Runs: the data loader's scheme and rates over one iterated epoch
(``sampler``), the noise measured (``noise``), and ``epochs`` times the realised batches per epoch.

Corrected epsilons come from our accountants (``epsilons``), each changing one thing from what the
accountant was told (the rate, the scheme, the normalisation, the steps or the noise); the ``runs`` row
changes all of them at once. Severity: ``critical`` when the reported epsilon is below the corrected one,
i.e. the reported epsilon is understated or rests on an analysis of something that does not run and
every valid analysis we have gives more; ``low``/``info`` when the difference only makes the report
conservative or is harmless.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from accounting.errors import ConfigurationError
from attacks.opacus_checks import epsilons as eps
from attacks.opacus_checks.findings import OpacusFinding, worst
from attacks.opacus_checks.load import OpacusSetup
from attacks.opacus_checks.noise import NoiseFacts
from attacks.opacus_checks.parameters import OutsideParameter, outside_findings
from attacks.opacus_checks.records import DuplicateFacts, duplicate_findings
from attacks.opacus_checks.sampler import SamplerFacts

RATE_TOLERANCE = 1e-3  # relative: rates this close are the same (float rounding of 1 / len)
EPSILON_TOLERANCE = 0.01  # relative: a reported epsilon this close to the corrected one is not understated


def accounted_steps(setup: OpacusSetup, told_rate: float, run_steps: int) -> int:
    """The steps the reported epsilon is for (opacus's ``int(epochs / sample_rate)`` for accounted_epochs)."""
    if setup.accounted_steps is not None:
        return int(setup.accounted_steps)
    if setup.accounted_epochs is not None:
        steps = int(setup.accounted_epochs / told_rate)
        if steps < 1:
            raise ConfigurationError("accounted_epochs", f"{setup.accounted_epochs:g} epochs at sample rate "
                                     f"{told_rate:.4g} are {steps} steps; the claim must be for at least one step")
        return steps
    return run_steps


def steps_source(setup: OpacusSetup) -> str:
    """Where the accounted steps come from: ``accounted_steps``, ``accounted_epochs`` or ``loop`` (assumed)."""
    if setup.accounted_steps is not None:
        return "accounted_steps"
    return "accounted_epochs" if setup.accounted_epochs is not None else "loop"


def runs_epsilon(facts: SamplerFacts, noise_multiplier: float, steps: int, delta: float,
                 realised_normalisation: bool = False) -> tuple[float, str]:
    """The epsilon of what the loop runs (see ``epsilons`` for each scheme's analysis and its tightness)."""
    if facts.scheme == "poisson":
        if realised_normalisation:
            return eps.revealed_batch_size_epsilon(facts.population, facts.poisson_rate, noise_multiplier, steps,
                                                   delta)
        return eps.poisson_epsilon(facts.poisson_rate, noise_multiplier, steps, delta)
    if facts.scheme in ("shuffled", "sequential") or facts.once_per_epoch:
        epochs = math.ceil(steps / facts.batches_per_epoch)
        return eps.once_per_epoch_epsilon(noise_multiplier, epochs, delta)
    if facts.scheme == "with-replacement":
        return eps.with_replacement_epsilon(facts.draws_per_batch, facts.max_draw_probability, noise_multiplier,
                                            steps, delta)
    return math.inf, "none: no analysis of ours covers this sampler (unknown scheme, records not once per epoch)"


def _severity(reported: float, corrected: float) -> str:
    return "critical" if corrected > reported * (1 + EPSILON_TOLERANCE) else "low"


def _finding(code, reported, corrected, how, message, **values) -> OpacusFinding:
    severity = _severity(reported, corrected)
    verdict = (f"the reported epsilon {reported:.3g} is below the corrected {corrected:.3g} ({how})"
               if severity == "critical" else
               f"the reported epsilon {reported:.3g} still covers the corrected {corrected:.3g} ({how})")
    return OpacusFinding(code, severity, f"{message}: {verdict}",
                         {"reported_epsilon": reported, "corrected_epsilon": corrected, "analysis": how, **values})


@dataclass(frozen=True)
class _Told:
    """What the reported epsilon rests on, beside the steps the loop runs."""

    reported: float
    noise_multiplier: float
    rate: float
    accounted_steps: int
    run_steps: int
    delta: float


def check_setup(setup: OpacusSetup, facts: SamplerFacts, noise: NoiseFacts, delta: float, *,
                outside: list[OutsideParameter] = (), duplicates: DuplicateFacts | None = None) -> dict:
    """Rows (epsilons of what is told and what runs) and findings, as one JSON-ready dict."""
    mechanism = setup.privacy_engine.accountant.mechanism()
    z_told, q_told = noise.told_noise_multiplier, noise.told_sample_rate
    run_steps = setup.epochs * facts.batches_per_epoch
    acc_steps = accounted_steps(setup, q_told, run_steps)
    opacus_eps = eps.opacus_epsilon(mechanism, z_told, q_told, acc_steps, delta)
    reported = setup.claim_epsilon if setup.claim_epsilon is not None else opacus_eps
    told = _Told(reported, z_told, q_told, acc_steps, run_steps, delta)
    source = steps_source(setup)
    findings = [
        *outside_findings(list(outside)),
        *_rate_findings(told, facts),
        *_scheme_findings(told, facts),
        *_normalisation_findings(told, facts, noise),
        *_step_findings(told, facts, setup.epochs),
        *_noise_findings(told, noise),
        *_claim_findings(setup.claim_epsilon, opacus_eps),
    ]
    if not any(f.code == "claim-below-opacus" for f in findings):
        findings += _told_findings(told, f"opacus's {mechanism} accountant" if setup.claim_epsilon is None
                                   else "the user's claim")
    z_runs = noise.effective_upper if noise.noise_flagged else z_told
    runs, runs_how = runs_epsilon(facts, z_runs, run_steps, delta, noise.realised_normalisation)
    if outside:
        runs, runs_how = math.inf, (f"none: {', '.join(p.name for p in outside)} trained outside the private "
                                    "optimizer (no clipping, no noise)")
    if duplicates is not None:
        findings += duplicate_findings(duplicates, facts.scheme, facts.poisson_rate, z_runs, run_steps, delta)
    if source == "loop":
        findings.append(_assumed_steps_finding(told, setup.claim_epsilon is not None))
    rows = {
        "opacus": {"epsilon": opacus_eps, "analysis": f"opacus {mechanism} accountant: Poisson at rate "
                   f"{q_told:.4g}, noise multiplier {z_told:.4g}, {acc_steps} steps (what it was told)"},
        "runs": {"epsilon": runs, "analysis": runs_how + f"; noise multiplier {z_runs:.4g}, {run_steps} steps"},
    }
    return {
        "verdict": "VIOLATION" if worst(findings) == "critical" else "PASS",
        "delta": delta,
        "reported_epsilon": reported,
        "reported_by": "the user's claim" if setup.claim_epsilon is not None else f"opacus {mechanism} accountant",
        "rows": rows,
        "findings": [f.to_dict() for f in findings],
        "sampler": facts.to_dict(),
        "noise": noise.to_dict(),
        "steps": {"run": run_steps, "accounted": acc_steps, "epochs": setup.epochs, "accounted_from": source},
        "unit": {"protects": "record", "duplicates": duplicates.to_dict() if duplicates is not None else None},
    }


def _assumed_steps_finding(told: _Told, claimed: bool) -> OpacusFinding:
    """The accounted steps were not given: they are taken from the loop, so a step mismatch cannot be seen."""
    right = "" if claimed else " (right for opacus's accountant read after the loop: it counts the steps run)"
    return OpacusFinding(
        "steps-assumed", "info",
        f"no accounted_epochs or accounted_steps given: the reported epsilon is assumed to be for the "
        f"{told.run_steps} steps the loop runs{right}; if it was computed for fewer (make_private_with_epsilon's "
        "target for its epochs, or a claim), pass accounted_epochs so that a step mismatch can be found",
        {"run_steps": told.run_steps})


def _rate_findings(told: _Told, facts: SamplerFacts) -> list[OpacusFinding]:
    """(1) The rate told against the rate the most exposed record really has (Poisson or draws with
    replacement; batches that hold each record once per epoch are finding (2)'s)."""
    q_told, realised = told.rate, facts.worst_inclusion_rate
    if facts.scheme in ("poisson", "with-replacement") and realised > q_told * (1 + RATE_TOLERANCE):
        corrected, how = eps.poisson_epsilon(min(realised, 1.0), told.noise_multiplier, told.accounted_steps,
                                             told.delta)
        return [_finding(
            "rate-mismatch", told.reported, corrected, how.replace("tight", "at the realised rate, as if Poisson"),
            f"the accountant was told sample rate {q_told:.4g} (1 / len(data_loader) = 1/{facts.loader_length}) but "
            f"a record joins a batch with probability up to {realised:.4g} "
            f"({realised / q_told:.3g}x; mean batch {facts.mean_batch_size:.4g} of "
            f"{facts.population} records, {facts.sampler_class})",
            told_rate=q_told, realised_rate=realised,
            batch_over_population=facts.mean_batch_size / facts.population)]
    if realised < q_told * (1 - RATE_TOLERANCE) and facts.scheme == "poisson":
        return [OpacusFinding("rate-above-realised", "low",
                              f"the accountant was told rate {q_told:.4g}, the sampler draws at "
                              f"{realised:.4g}: the report is conservative",
                              {"told_rate": q_told, "realised_rate": realised})]
    return []


def _scheme_findings(told: _Told, facts: SamplerFacts) -> list[OpacusFinding]:
    """(2) The scheme: opacus's accountants analyse Poisson sampling only."""
    if facts.scheme == "poisson":
        return []
    corrected, how = runs_epsilon(facts, told.noise_multiplier, told.accounted_steps, told.delta)
    extra = {}
    if facts.scheme in ("shuffled", "sequential") or facts.once_per_epoch:
        reference, reference_how = eps.fixed_size_epsilon(facts.fixed_batch_size, facts.population,
                                                          told.noise_multiplier, told.accounted_steps, told.delta)
        extra = {"fixed_size_reference_epsilon": reference, "fixed_size_reference": reference_how}
    return [_finding(
        "not-poisson", told.reported, corrected, how,
        f"the loader draws {facts.scheme} batches ({facts.batch_sampler_class} over {facts.sampler_class}, "
        f"batch sizes {min(facts.batch_sizes)}..{max(facts.batch_sizes)}) but opacus accounts Poisson sampling",
        scheme=facts.scheme, **extra)]


def _normalisation_findings(told: _Told, facts: SamplerFacts, noise: NoiseFacts) -> list[OpacusFinding]:
    """(3) Normalisation by the realised batch size (reveals the size of a Poisson batch)."""
    if not noise.realised_normalisation:
        return []
    if facts.scheme != "poisson":
        return [OpacusFinding("realised-normalisation", "info",
                              "the noisy gradient is divided by the realised batch size; with fixed-size "
                              "batches that size is public, so nothing is revealed",
                              {"slope": noise.normalisation_slope})]
    corrected, how = eps.revealed_batch_size_epsilon(facts.population, facts.poisson_rate, told.noise_multiplier,
                                                     told.accounted_steps, told.delta)
    return [_finding(
        "realised-normalisation", told.reported, corrected, how,
        f"the noisy gradient is divided by the realised batch size (noise std scales as batch size^"
        f"{noise.normalisation_slope:.2f}), which reveals each batch's size (opacus #571)",
        slope=noise.normalisation_slope)]


def _step_findings(told: _Told, facts: SamplerFacts, epochs: int) -> list[OpacusFinding]:
    """(4) The steps the report is for against the steps the loop runs."""
    if told.accounted_steps == told.run_steps:
        return []
    if facts.scheme != "poisson":
        corrected, how = runs_epsilon(facts, told.noise_multiplier, told.run_steps, told.delta)
    else:
        corrected, how = eps.poisson_epsilon(told.rate, told.noise_multiplier, told.run_steps, told.delta)
    return [_finding(
        "step-mismatch", told.reported, corrected, f"{how}, {told.run_steps} steps",
        f"the reported epsilon is for {told.accounted_steps} steps, the loop runs {epochs} epochs of "
        f"{facts.batches_per_epoch} batches = {told.run_steps} steps", accounted_steps=told.accounted_steps,
        run_steps=told.run_steps)]


def _noise_findings(told: _Told, noise: NoiseFacts) -> list[OpacusFinding]:
    """(5) The noise really added, measured against the multiplier the accountant is told."""
    if not noise.noise_flagged:
        return []
    z_told = told.noise_multiplier
    message = (f"the optimizer adds noise of multiplier {noise.effective_noise_multiplier:.4g} (measured; "
               f"upper limit {noise.effective_upper:.4g} at false-alarm {noise.false_alarm:g}) while the "
               f"accountant is told {z_told:.4g}")
    if noise.effective_noise_multiplier >= z_told:
        return [OpacusFinding("noise-above-accounted", "low", message + ": the report is conservative",
                              {"measured": noise.effective_noise_multiplier, "told": z_told})]
    corrected, how = eps.poisson_epsilon(told.rate, noise.effective_upper, told.accounted_steps, told.delta)
    how += f" at the measured multiplier's upper confidence limit {noise.effective_upper:.4g}"
    return [_finding("noise-below-accounted", told.reported, corrected, how, message,
                     measured=noise.effective_noise_multiplier, told=z_told)]


def _told_findings(told: _Told, reported_by: str) -> list[OpacusFinding]:
    """(6) The reported epsilon against our tight epsilon of exactly what the accountant was told (opacus's
    ``gdp`` accountant, a central-limit approximation, reports less for few steps)."""
    try:
        corrected, how = eps.poisson_epsilon(told.rate, told.noise_multiplier, told.accounted_steps, told.delta)
    except ConfigurationError:  # more steps than our PLD accountant composes: no tight figure to compare
        return []
    if _severity(told.reported, corrected) != "critical":
        return []
    return [_finding("understated-for-what-was-told", told.reported, corrected, how,
                     f"{reported_by} gives less than what the accountant was told accounts to (Poisson at rate "
                     f"{told.rate:.4g}, noise multiplier {told.noise_multiplier:.4g}, {told.accounted_steps} steps)")]


def _claim_findings(claimed: float | None, opacus_eps: float) -> list[OpacusFinding]:
    """A user's claim below what opacus's own accountant gives for what it was told."""
    if claimed is None or claimed >= opacus_eps * (1 - EPSILON_TOLERANCE):
        return []
    return [OpacusFinding("claim-below-opacus", "critical",
                          f"the claimed epsilon {claimed:.3g} is below what opacus's own "
                          f"accountant gives for what it was told ({opacus_eps:.3g})",
                          {"claimed_epsilon": claimed, "opacus_epsilon": opacus_eps})]


def check_opacus_setup(spec: str, delta: float | None = None, repetitions: int | None = None,
                       false_alarm: float | None = None, claimed_epsilon: float | None = None) -> dict:
    """Load ``file.py:function``, read its loader, measure its noise and check it (one dict); ``claimed_epsilon``
    (the command's) replaces the set-up's own."""
    import dataclasses

    from attacks.opacus_checks.load import build_setup
    from attacks.opacus_checks.noise import DEFAULT_FALSE_ALARM, DEFAULT_REPETITIONS, measure_noise
    from attacks.opacus_checks.parameters import parameters_outside
    from attacks.opacus_checks.records import find_duplicates
    from attacks.opacus_checks.sampler import read_loader

    setup = build_setup(spec)
    if claimed_epsilon is not None:
        setup = dataclasses.replace(setup, claim_epsilon=float(claimed_epsilon))
    delta = setup.delta if delta is None and setup.delta is not None else (delta if delta is not None else 1e-5)
    outside = parameters_outside(setup.model, setup.optimizer)  # before a step fails on their gradients
    facts = read_loader(setup.data_loader, setup.optimizer)
    noise = measure_noise(setup.model, setup.optimizer, setup.privacy_engine, setup.data_loader,
                          repetitions=repetitions or DEFAULT_REPETITIONS,
                          false_alarm=false_alarm or DEFAULT_FALSE_ALARM,
                          max_physical_batch_size=facts.max_physical_batch_size,
                          outside=[p.parameter for p in outside], input_key=setup.input_key,
                          label_key=setup.label_key)
    duplicates = find_duplicates(setup.data_loader.dataset)
    return check_setup(setup, facts, noise, delta, outside=outside, duplicates=duplicates)
