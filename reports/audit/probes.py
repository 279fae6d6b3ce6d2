"""The probes of an audit: each built on its target's own setting (or declined), planned before any
work (trials, a time estimate from small timed batches, the executor), then run through ``attacks.attack.run_attack``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass

from accounting.seeding import named_rng
from reports.audit.cache import thin_curve, trim_details
from reports.audit.model import ProbeSection, ProbeSpec, Series
from reports.audit.targets import ProbeDeclined

ESTIMATOR = "clopper-pearson (Bonferroni over its thresholds)"
AUTO_PARALLEL_SECONDS = 10.0  # ``--executor auto`` runs a probe on worker processes above this estimate


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class PlannedProbe:
    """A probe ready to run on its target (``probe`` is None when it declined: ``reason`` says why)."""

    spec: ProbeSpec
    trials: int
    probe: object | None
    params: dict
    reason: str | None = None
    seconds_estimate: float | None = None  # one process, both worlds
    executor: str = "inprocess"
    workers: int = 1

    @property
    def wall_estimate(self) -> float | None:
        """Estimated seconds on the chosen executor (batches spread over its workers)."""
        if self.seconds_estimate is None:
            return None
        return self.seconds_estimate / (self.workers if self.executor == "processes" else 1)


def probe_budget(spec: ProbeSpec, override: int | None, target=None, confidence: float = 0.95) -> int:
    """Trials per world: ``--trials`` overrides mechanism-level probes only; an end-to-end probe runs the
    real algorithm per trial and keeps its configured budget. Without ``trials`` in the configuration, a
    target that plans budgets (``default_trials``) chooses it; any other target refuses."""
    trials = spec.trials
    if trials is None:
        planner = getattr(target, "default_trials", None)
        if planner is None:
            from accounting.errors import ConfigurationError

            raise ConfigurationError("trials", "missing: this target plans no default budget; give trials")
        trials = planner(spec.name, confidence)
    return trials if (override is None or spec.kind == "end-to-end") else int(override)


def build_probe(target, spec: ProbeSpec):
    """The probe object attacking ``target``'s own setting, and its parameters (ProbeDeclined if it
    cannot). A parameter the target hands over that the probe class does not declare is a bug here,
    never silently dropped."""
    from attacks.probes import get_probe, probe_class

    params = target.probe_parameters(spec.name, dict(spec.params))
    declared = {f.name for f in dataclasses.fields(probe_class(spec.name))}
    undeclared = sorted(set(params) - declared)
    if undeclared:
        raise TypeError(f"target {type(target).__name__} hands probe {spec.name!r} undeclared parameters {undeclared}")
    return get_probe(spec.name, **params), params


def estimate_seconds(probe, trials: int, seed: int, batch_size: int | None = None) -> float | None:
    """Seconds for ``trials`` per world in one process, from timing two small batches of the world with
    the canary (a twentieth and a tenth of a batch, after a warm-up call): their difference is the cost
    of the extra trials without the fixed cost of a call, which a small batch would otherwise multiply."""
    if probe.needs_training:
        return None  # a learned score must be trained before it can score
    small = max(1, min(trials, batch_size or probe.batch_size) // 20)
    try:
        _time_scores(probe, small, seed)  # warm-up: first-call costs (imports, caches) are not per trial
        seconds = [_time_scores(probe, size, seed) for size in (small, 2 * small)]
    except Exception:  # noqa: BLE001 - the probe's own run reports its failure; no estimate here
        return None
    per_trial = (seconds[1] - seconds[0]) / small
    if per_trial <= 0:  # timer noise: fall back to the larger batch's mean
        per_trial = seconds[1] / (2 * small)
    return 2.0 * trials * per_trial


def _time_scores(probe, size: int, seed: int) -> float:
    started = time.perf_counter()
    probe.scores(1, size, named_rng(seed, "estimate"))
    return time.perf_counter() - started


def choose_executor(
    probe, trials: int, seconds: float | None, options, batch_size: int | None = None
) -> tuple[str, int]:
    """The executor and worker count of one probe: as asked, or for ``auto`` worker processes when the
    probe is long enough (estimate over ``AUTO_PARALLEL_SECONDS``), at most one per batch of either
    world. Every executor gives the same scores for the same seed, so the choice changes only the time."""
    workers = int(options.workers or usable_cpus())
    if options.executor != "auto":
        return options.executor, (1 if options.executor == "inprocess" else workers)
    batches = 2 * -(-int(trials) // max(1, int(batch_size or probe.batch_size)))  # both worlds
    if workers > 1 and batches > 1 and seconds is not None and seconds > AUTO_PARALLEL_SECONDS:
        return "processes", min(workers, batches)
    return "inprocess", 1


def check_fits(probe, trials: int, batch_size: int | None, workers: int) -> None:
    """Refuse before any work (ConfigurationError naming trials or batch_size) a budget whose batches
    cannot fit in memory, as ``run_attack`` would refuse it once the audit had started."""
    from attacks.run_plan import plan_run

    plan_run(probe, trials - (trials // 2 if probe.needs_training else 0), batch_size, "auto", workers)


def plan_probe(target, spec: ProbeSpec, override: int | None, seed: int, options,
               budget: float | None = None) -> PlannedProbe:
    """Build (or decline) one probe, estimate its run time and choose where it runs; ``budget``: seconds this probe
    may take when the target plans its trials (``fit_budget``)."""
    try:
        probe, params = build_probe(target, spec)
    except ProbeDeclined as declined:
        trials = probe_budget(spec, override) if spec.trials is not None else 0  # 0: no budget planned
        return PlannedProbe(spec, trials, None, dict(spec.params), declined.reason)
    trials = probe_budget(spec, override, target, getattr(options, "confidence", 0.95))
    if getattr(probe, "one_run", False):  # one run of the system with ``trials`` canaries, in this process
        if hasattr(probe, "check_canaries"):  # a count the system cannot hold is refused before any work
            probe.check_canaries(trials)
        return PlannedProbe(spec, trials, probe, params)
    check_fits(probe, trials, spec.batch_size, 1)  # before the timed batches, which are a part of a batch
    if budget is not None and spec.trials is None:
        fitted = fit_budget(target, spec, probe, trials, seed, budget, options)
        if fitted is not None:
            return fitted
        trials = probe_budget(spec, override, target, getattr(options, "confidence", 0.95))  # the capped plan
    seconds = estimate_seconds(probe, trials, seed, spec.batch_size) if options.estimate else None
    executor, workers = choose_executor(probe, trials, seconds, options, spec.batch_size)
    check_fits(probe, trials, spec.batch_size, workers)
    return PlannedProbe(spec, trials, probe, params, None, seconds, executor, workers)


def fit_budget(target, spec: ProbeSpec, probe, trials: int, seed: int, budget: float, options):
    """Cap a planned budget to ``budget`` seconds (timed on a first batch, one process: the workers only make it
    faster): the target is told the cap (``cap_trials``, kept in its plan with the power that remains); where the cap
    leaves too few trials to certify the claim even with a perfect attack, the target's one-run probe replaces it
    (``one_run_instead``), planned and returned. None: keep planning ``spec`` (at the cap, if any)."""
    from attacks.planner import trials_needed

    seconds = estimate_seconds(probe, trials, seed, spec.batch_size)
    if seconds is None or seconds <= budget:
        return None
    capped = max(1, int(trials * budget / seconds))
    claim = target.claim
    try:
        floor = trials_needed(claim.epsilon, claim.delta, getattr(options, "confidence", 0.95))
    except Exception:  # noqa: BLE001 - no finite floor: only the cap applies
        floor = 0
    one_run = getattr(target, "one_run_instead", lambda name: None)(spec.name) if capped < floor else None
    if one_run is not None:
        return plan_probe(target, one_run, None, seed, options)
    if hasattr(target, "cap_trials"):
        target.cap_trials(spec.name, capped, budget, seconds)
    return None


def declined_section(planned: PlannedProbe) -> ProbeSection:
    return ProbeSection(
        planned.spec.name, planned.spec.kind, "declined", planned.reason, params=planned.params, trials=planned.trials
    )


def run_probe(
    target, planned: PlannedProbe, seed: int, options, checkpoint: str | None, confidence: float
) -> ProbeSection:
    """Run one planned probe against its target's claim; the section holds numbers only."""
    from attacks.attack import run_attack
    from attacks.planner import bonferroni_ceiling

    claim = target.claim
    if getattr(planned.probe, "one_run", False):
        return run_one_run_probe(target, planned, seed, confidence)
    result = run_attack(planned.probe, planned.trials, seed=seed, executor=planned.executor, workers=planned.workers,
                        scheduler=options.scheduler, checkpoint_dir=checkpoint, delta=claim.delta,
                        confidence=confidence, claim_epsilon=claim.epsilon, claim_delta=claim.delta,
                        progress=options.progress, batch_size=planned.spec.batch_size)
    fpr, tpr = thin_curve(result.roc["fpr"], result.roc["tpr"])
    verdict = result.verdict
    meta = result.probe
    return ProbeSection(
        name=planned.spec.name,
        kind=planned.spec.kind,
        outcome="ran",
        threat_model=meta["threat_model"],
        description=meta["description"],
        trials=int(result.trials),
        seed=seed,
        params=meta.get("params", {}),
        bounds=tuple(dict(b.to_dict(), details=trim_details(b.details)) for b in result.bounds),
        roc=Series("empirical ROC", tuple(fpr), tuple(tpr)),
        auc=result.roc.get("auc"),
        tradeoff=target.tradeoff(),
        true_epsilon=result.true_epsilon,
        status=None if verdict is None else verdict.status,
        p_value=None if verdict is None else verdict.p_value,
        ceiling=bonferroni_ceiling(int(result.trials), claim.delta, confidence) if verdict is None else verdict.ceiling,
        confidence=confidence,
        batches_total=result.batches_total,
        batches_resumed=result.batches_resumed,
        power=_power(planned.probe, int(result.trials), claim, confidence),
        roc_metrics=_roc_metrics(result, confidence, seed),
    )


def run_one_run_probe(target, planned: PlannedProbe, seed: int, confidence: float) -> ProbeSection:
    """One run of a one-run probe (``run_once``) with ``planned.trials`` canaries against the target's claim."""
    claim, probe = target.claim, planned.probe
    outcome = probe.run_once(planned.trials, seed, claim.epsilon, claim.delta, confidence)
    return ProbeSection(
        name=planned.spec.name,
        kind=planned.spec.kind,
        outcome="ran",
        threat_model=probe.threat_model,
        description=probe.description,
        trials=int(planned.trials),
        seed=seed,
        params=probe.params(),
        bounds=tuple({**b, "delta": claim.delta} for b in outcome.bounds),
        status=outcome.status,
        p_value=outcome.p_value,
        ceiling=outcome.ceiling,
        confidence=confidence,
        findings=tuple(outcome.findings),
    )


# an audit runs many probes: BC intervals from 200 resamples up to 20,000 scores, none above (``estimate``: BCa)
AUDIT_RESAMPLES, AUDIT_BOOTSTRAP_MAX_SCORES = 200, 20_000


def _roc_metrics(result, confidence: float, seed: int) -> dict | None:
    """TPR at fixed FPRs, hull AUROC and maximum accuracy where the probe kept its scores (the sorted
    reduction), with BC bootstrap intervals; None where it kept per-threshold counts only."""
    from attacks.estimators.roc_metrics import roc_metrics

    if result.scores_out is None or result.scores_in is None:
        return None
    return roc_metrics(result.scores_out, result.scores_in, confidence=confidence, seed=seed,
                       resamples=AUDIT_RESAMPLES, bca_max_scores=0, bootstrap_max_scores=AUDIT_BOOTSTRAP_MAX_SCORES)


def _power(probe, trials: int, claim, confidence: float) -> dict | None:
    """The probe's stated power at its budget (``attacks.power``), as typed fields and a sentence."""
    from accounting.errors import ConfigurationError
    from attacks.power import probe_power

    try:
        power = probe_power(probe, trials, claim.epsilon, claim.delta, confidence)
    except (ConfigurationError, ArithmeticError, ValueError):  # a figure we cannot state is not stated
        return None
    return None if power is None else power.to_dict()


def failed_section(planned: PlannedProbe, reason: str) -> ProbeSection:
    return ProbeSection(
        planned.spec.name, planned.spec.kind, "failed", reason, params=planned.params, trials=planned.trials
    )
