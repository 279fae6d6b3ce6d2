"""The audit orchestrator: claim + accountants + planner + probes + utility run -> one target section.

``run_audit(targets, options)`` audits each ``TargetSpec`` in turn. Every finished section (accounting,
calibration, each probe, utility) is saved as JSON in ``options.work_dir`` under a key that hashes
everything it depends on, and probes checkpoint their finished batches there too, so an interrupted
audit run again with the same configuration and seed resumes where it stopped and gives the same
result. Sections that cannot be produced (a missing optional piece, a failing run) say so with their
reason instead of numbers. The output is plain JSON-ready dicts in the layout of ``reports.model``.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field

import numpy as np

from accounting.errors import ConfigurationError
from attacks import audit_accounting as acc
from attacks import audit_findings as fnd
from attacks import audit_targets as tgt
from attacks.audit_cache import SectionCache, guard, stable_hash, thin_curve, trim_details


@dataclass(frozen=True)
class ProbeSpec:
    name: str
    kind: str  # "mechanism" | "end-to-end"
    trials: int
    params: dict = field(default_factory=dict)
    batch_size: int | None = None  # trials per checkpointed batch (default: the probe's own)


@dataclass(frozen=True)
class TargetSpec:
    name: str
    algorithm: str
    claim: dict  # epsilon, delta, neighbouring, unit, [source, units, unit_plural], text
    description: str = ""
    parameters: dict = field(default_factory=dict)
    probes: tuple = ()
    accountants: tuple = ("moments", "rdp", "pld", "prv", "exact", "dpa-rdp")
    utility_runs: int = 1
    reference_delta: float = 1e-5


@dataclass
class AuditOptions:
    seed: int = 0
    confidence: float = 0.95
    executor: str = "inprocess"
    workers: int = 2
    scheduler: str | None = None
    trials: int | None = None  # overrides every probe's budget
    work_dir: str | None = None  # section cache and probe checkpoints
    progress: bool = True
    resumed: list = field(default_factory=list)


def run_probe(
    target: TargetSpec,
    spec: ProbeSpec,
    index: int,
    options: AuditOptions,
    checkpoint_dir: str | None,
    confidence: float,
) -> dict:
    """One probe of a target through the attack runner, as a report section."""
    import dataclasses

    from attacks.attack import run_attack
    from attacks.probes import get_probe, probe_class

    try:
        cls = probe_class(spec.name)
    except ConfigurationError as exc:  # a registered probe whose module has not been built
        return {"available": False, "reason": str(exc).split(": ", 1)[-1]}
    known = {f.name for f in dataclasses.fields(cls)}
    shared = {k: v for k, v in tgt.probe_defaults(target).items() if k in known}
    probe = get_probe(spec.name, **{**shared, **spec.params})
    trials = options.trials or spec.trials
    seed = int(np.random.SeedSequence([options.seed, index]).generate_state(1)[0])
    result = run_attack(
        probe,
        trials,
        seed=seed,
        executor=options.executor,
        workers=options.workers,
        scheduler=options.scheduler,
        checkpoint_dir=checkpoint_dir,
        delta=target.claim["delta"],
        confidence=confidence,
        claim_epsilon=target.claim["epsilon"],
        claim_delta=target.claim["delta"],
        progress=options.progress,
        batch_size=spec.batch_size,
    )
    mechanism, steps = tgt.target_mechanism(target)
    meta = result.probe
    fpr, tpr = thin_curve(result.roc["fpr"], result.roc["tpr"])
    bounds = [dict(b.to_dict(), details=trim_details(b.details)) for b in result.bounds]
    verdict = result.verdict.to_dict() if result.verdict is not None else None
    if verdict is not None and verdict.get("best_bound"):
        verdict["best_bound"] = dict(
            verdict["best_bound"], details=trim_details(verdict["best_bound"]["details"])
        )
    return {
        "name": spec.name,
        "kind": spec.kind,
        "available": True,
        "threat_model": meta["threat_model"],
        "description": meta["description"],
        "trials": int(result.trials),
        "seed": seed,
        "params": meta.get("params", {}),
        "bounds": bounds,
        "roc": {"x": fpr, "y": tpr, "label": "empirical ROC"},
        "auc": result.roc.get("auc"),
        "tradeoff": acc.tradeoff_curve(mechanism, steps),
        "true_epsilon": result.true_epsilon,
        "verdict": verdict,
        "batches": {"total": result.batches_total, "resumed": result.batches_resumed},
    }


def audit_target(target: TargetSpec, index: int, options: AuditOptions, log=None) -> dict:
    """Audit one target; returns its report section."""
    log = log or (lambda msg: print(msg, file=sys.stderr))
    cache = SectionCache(options.work_dir, index, options)
    # each section's key holds exactly what it depends on, so changing, say, the trial budget reuses
    # the accounting and the utility run of an earlier audit in the same output directory
    system = {"algorithm": target.algorithm, "parameters": target.parameters, "claim": target.claim}
    probe_plan = {
        "probes": [asdict(p) for p in target.probes],
        "trials": options.trials,
        "confidence": options.confidence,
    }
    mechanism, steps = tgt.target_mechanism(target)
    k = max(1, len(target.probes))
    confidence = 1.0 - (1.0 - options.confidence) / k  # Bonferroni over the target's probes

    log(f"[{target.name}] accounting ({len(target.accountants)} accountants)")
    accounting = cache.get_or_compute(
        "accounting",
        [system, list(target.accountants), target.reference_delta],
        lambda: guard(
            "accounting",
            lambda: acc.accounting_section(
                mechanism,
                steps,
                target.claim,
                list(target.accountants),
                reference_delta=target.reference_delta,
            ),
        ),
    )
    method = tgt.calibration_of(target)
    calibration = None
    if method is not None:
        calibration = cache.get_or_compute(
            "calibration",
            [target.claim, method],
            lambda: guard(
                "calibration check",
                lambda: fnd.calibration_section(target.claim["epsilon"], target.claim["delta"], method),
            ),
        )
    planner = cache.get_or_compute(
        "planner",
        [system, probe_plan],
        lambda: guard("planner", lambda: _planner(target, options, confidence)),
    )
    probes = []
    for i, spec in enumerate(target.probes):
        budget = options.trials or spec.trials
        log(f"[{target.name}] probe {spec.name} ({spec.kind}, {budget} trials per world)")
        key = [system, probe_plan, i, options.seed, index]
        checkpoint = None if cache.root is None else str(cache.root / f"probe-{i}-{stable_hash(key)[:12]}")
        section = cache.get_or_compute(
            f"probe-{i}",
            key,
            lambda spec=spec, i=i, cp=checkpoint: guard(
                f"probe {spec.name}",
                lambda: run_probe(target, spec, index * 1000 + i, options, cp, confidence),
            ),
        )
        if section.get("available") is False:
            section = {"name": spec.name, "kind": spec.kind, "available": False, "reason": section["reason"]}
        probes.append(section)
    log(f"[{target.name}] utility ({target.utility_runs} run(s))")
    utility = cache.get_or_compute(
        "utility",
        [system, target.utility_runs, options.seed, index],
        lambda: guard(
            "utility run", lambda: tgt.utility_run(target, options.seed + index, target.utility_runs, log)
        ),
    )
    units, unit_name = tgt.protected_units(target)
    findings = fnd.findings(target.claim, accounting, calibration, units, unit_name)
    analytic = fnd.analytic_check(target.claim, accounting)
    verdict = fnd.combine_verdict(target.claim, accounting, analytic, probes, options.confidence)
    parameters = {k: v for k, v in target.parameters.items()}
    parameters.update({"mechanism": acc.describe(mechanism), "releases": steps})
    return {
        "name": target.name,
        "algorithm": target.algorithm,
        "description": target.description,
        "parameters": parameters,
        "claim": target.claim,
        "accounting": accounting,
        "calibration": calibration,
        "planner": planner,
        "probes": probes,
        "verdict": verdict,
        "utility": utility,
        "findings": findings,
    }


def _planner(target: TargetSpec, options: AuditOptions, confidence: float) -> dict:
    from attacks.planner import max_certifiable_epsilon, trials_needed

    budgets = [options.trials or p.trials for p in target.probes] or [1]
    trials = max(budgets)
    delta = target.claim["delta"]
    ceiling = max_certifiable_epsilon(trials, delta, confidence)
    try:
        needed = trials_needed(target.claim["epsilon"], delta, confidence)
    except ConfigurationError:
        needed = None
    return {
        "trials": int(trials),
        "delta": delta,
        "confidence": confidence,
        "ceiling": ceiling,
        "trials_for_claim": needed,
    }


def run_audit(targets, options: AuditOptions, log=None) -> list[dict]:
    """Audit every target in order; returns their report sections."""
    return [audit_target(t, i, options, log) for i, t in enumerate(targets)]
