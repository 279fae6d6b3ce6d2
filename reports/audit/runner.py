"""The audit orchestrator: for each target, accounting, calibration check, planner, probes and utility,
then findings and verdicts.

Every finished section is saved in ``options.work_dir`` under a key that hashes what it depends on,
and probes checkpoint their batches there too, so an interrupted audit run again with the same
configuration and seed resumes and gives the same result. A section that cannot be produced says why.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field

from accounting.errors import ConfigurationError
from accounting.seeding import named_seed, named_sequence
from reports.audit import findings as rules
from reports.audit import verdicts
from reports.audit.accounting import accounting_section
from reports.audit.cache import SectionCache, guard, stable_hash
from reports.audit.fingerprint import audit_fingerprint, probe_fingerprint, user_code_hash
from reports.audit.model import (
    AccountingSection,
    CalibrationSection,
    Finding,
    PlannerSection,
    ProbeSection,
    TargetResult,
    TargetSpec,
    TargetVerdict,
    Unavailable,
    UtilitySection,
)
from reports.audit.probes import ESTIMATOR, PlannedProbe, declined_section, failed_section, plan_probe, run_probe
from reports.audit.targets import build_target


@dataclass
class AuditOptions:
    seed: int = 0
    confidence: float = 0.95
    executor: str = "auto"  # auto: worker processes for long probes (``probes.choose_executor``)
    workers: int | None = None  # processes executor: default the CPUs this process may use
    scheduler: str | None = None
    trials: int | None = None  # overrides every mechanism-level probe's budget
    work_dir: str | None = None  # section cache and probe checkpoints
    progress: bool = True
    estimate: bool = True  # time a first batch of each probe before the audit starts
    budget: float | None = None  # seconds of wall time for the probes whose trials the targets plan (``--budget``)
    reused: list = field(default_factory=list)
    recomputed: list = field(default_factory=list)  # saved sections found stale, with what changed


@dataclass
class PlannedTarget:
    """A target object with its planned probes (built once, before any work)."""

    index: int
    target: object
    probes: list[PlannedProbe]

    @property
    def confidence_per_probe_divisor(self) -> int:
        return max(1, sum(p.probe is not None for p in self.probes))


def plan_target(spec: TargetSpec, index: int, options: AuditOptions) -> PlannedTarget:
    """Build the target and its probes; a bad parameter is a ConfigurationError naming its path."""
    field_path = f"target[{index}]"
    try:
        target = build_target(spec)
    except ConfigurationError as exc:
        inner = (
            exc.field if exc.field.split(".")[0] in ("parameters", "algorithm", "claim") else f"parameters.{exc.field}"
        )
        raise ConfigurationError(f"{field_path}.{inner}", str(exc).split(": ", 1)[-1]) from None
    probes = []
    specs = probe_specs(target)
    share = None if options.budget is None else options.budget / max(1, sum(p.trials is None for p in specs))
    for i, probe in enumerate(specs):
        seed = named_seed(options.seed, "audit", index, "probe", i, probe.name)
        try:
            probes.append(plan_probe(target, probe, options.trials, seed, options, share))
        except ConfigurationError as exc:
            raise ConfigurationError(f"{field_path}.probes[{i}].{exc.field}", str(exc).split(": ", 1)[-1]) from None
    return PlannedTarget(index, target, probes)


def probe_specs(target) -> tuple:
    """The probes listed, else (none listed at all) the target's default ones; ``probes = []`` opts out."""
    spec = target.spec
    return spec.probes or (() if spec.probes_given else tuple(target.default_probes()))


def untested(target) -> bool:
    """A target that runs an implementation, whose configuration opted out of every probe (``probes = []``) and
    whose own checks measure nothing of what ran."""
    spec = target.spec
    return bool(spec.probes_given and not spec.probes and getattr(target, "runs_implementation", False)
                and not target.implementation_test())


def planner_section(planned: PlannedTarget, delta: float, epsilon: float, confidence: float) -> PlannerSection:
    """What the largest probe budget of the target can certify with the estimator the probes use."""
    from attacks.planner import estimator_ceiling, max_certifiable_epsilon, trials_needed

    trials = max([p.trials for p in planned.probes if p.probe is not None and p.trials > 0] or [1])  # 0: no canaries
    try:
        needed = trials_needed(epsilon, delta, confidence)
    except ConfigurationError:
        needed = None
    return PlannerSection(
        int(trials),
        delta,
        confidence,
        estimator_ceiling(trials, delta, confidence),
        max_certifiable_epsilon(trials, delta, confidence),
        needed,
        ESTIMATOR,
    )


def _system_key(target) -> dict:
    spec = target.spec
    code = getattr(target, "user_code", None)   # a target that runs a user's code: its files' hash
    return {"algorithm": spec.algorithm, "parameters": spec.parameters, "claim": asdict(spec.claim),
            **({"user_code": user_code_hash(code())} if callable(code) else {})}


def _analytic_sections(planned: PlannedTarget, cache: SectionCache, log):
    target = planned.target
    spec, claim = target.spec, target.claim
    log(f"[{spec.name}] accounting ({len(spec.accountants)} accountants)")
    accounting = cache.get_or_compute(
        "accounting",
        [_system_key(target), list(spec.accountants), spec.reference_delta],
        lambda: guard("accounting", lambda: accounting_section(target, list(spec.accountants))),
        AccountingSection | Unavailable,
        audit_fingerprint(),
    )
    calibration = None
    if target.calibration() is not None:
        calibration = cache.get_or_compute(
            "calibration",
            [asdict(claim), target.calibration()],
            lambda: guard(
                "calibration check", lambda: rules.calibration_section(claim.epsilon, claim.delta, target.calibration())
            ),
            CalibrationSection | Unavailable,
            audit_fingerprint(),
        )
    return accounting, calibration


def _probe_sections(planned: PlannedTarget, options: AuditOptions, cache: SectionCache, confidence, log):
    target = planned.target
    sections = []
    for i, probe in enumerate(planned.probes):
        if probe.probe is None:
            sections.append(declined_section(probe))
            continue
        budget = f"one run, {probe.trials} canaries" if getattr(probe.probe, "one_run", False) else (
            f"{probe.trials} trials per world")
        log(f"[{target.spec.name}] probe {probe.spec.name} ({probe.spec.kind}, {budget})")
        seed = named_seed(options.seed, "audit", planned.index, "probe", i, probe.spec.name)
        key = [
            _system_key(target),
            probe.spec.name,
            probe.spec.kind,  # the section records it
            probe.params,
            probe.trials,
            probe.spec.batch_size,
            seed,
            confidence,
        ]
        fingerprint = {**audit_fingerprint(), **probe_fingerprint(probe.probe)}
        name = f"probe-{i}-{stable_hash([key, fingerprint])[:12]}"
        checkpoint = None if cache.root is None else str(cache.root / name)
        sections.append(
            cache.get_or_compute(
                f"probe-{i}",
                key,
                lambda p=probe, s=seed, c=checkpoint: guard(
                    f"probe {p.spec.name}",
                    lambda: run_probe(target, p, s, options, c, confidence),
                    unavailable=lambda reason, p=p: failed_section(p, reason),
                ),
                ProbeSection,
                fingerprint,
            )
        )
    return tuple(sections)


def _utility_section(planned: PlannedTarget, options: AuditOptions, cache: SectionCache, log):
    target = planned.target
    runs = target.spec.utility_runs
    log(f"[{target.spec.name}] utility ({runs} run(s))")
    seed = named_sequence(options.seed, "audit", planned.index, "utility")
    return cache.get_or_compute(
        "utility",
        [_system_key(target), runs, options.seed, planned.index],
        lambda: guard("utility run", lambda: target.utility(seed, runs, log)),
        UtilitySection | Unavailable,
        audit_fingerprint(),
    )


def target_verdict(target, accounting, probes, confidence: float) -> TargetVerdict:
    """Both verdicts of a target and their combination (``reports.audit.verdicts``)."""
    analytic = verdicts.analytic_verdict(target.claim, accounting)
    empirical = verdicts.empirical_verdict(target.claim, probes, confidence)
    status, rule = verdicts.combine(analytic, empirical)
    upper = None if isinstance(accounting, Unavailable) else accounting.best_upper_bound()
    lower = empirical.lower_bound
    # negative when a rigorous lower bound exceeds a valid upper bound: a contradiction, never shown as 0
    gap = None if upper is None or lower is None else upper.epsilon - lower.epsilon
    return TargetVerdict(status, rule, analytic, empirical, upper, gap)


def audit_target(planned: PlannedTarget, options: AuditOptions, log) -> TargetResult:
    """Audit one planned target; returns its typed result."""
    target = planned.target
    spec = target.spec
    cache = SectionCache(options.work_dir, planned.index, options.reused, options.recomputed)
    confidence = 1.0 - (1.0 - options.confidence) / planned.confidence_per_probe_divisor  # Bonferroni
    accounting, calibration = _analytic_sections(planned, cache, log)
    planner = guard("planner", lambda: planner_section(planned, spec.claim.delta, spec.claim.epsilon, confidence))
    probes = _probe_sections(planned, options, cache, confidence, log) + tuple(target.measured_probes(confidence))
    utility = _utility_section(planned, options, cache, log)
    verdict = target_verdict(target, accounting, probes, confidence)
    found = rules.all_findings(target, accounting, calibration, verdict, probes)
    verdict = verdicts.with_critical_findings(verdict, found)
    if untested(target):
        verdict = verdicts.with_untested_implementation(verdict)
        found = [*found, Finding("implementation-untested", "high", {"algorithm": spec.algorithm})]
    return TargetResult(
        spec.name,
        spec.algorithm,
        spec.description,
        target.report_parameters(),
        spec.claim,
        accounting,
        calibration,
        planner,
        probes,
        utility,
        found,
        verdict,
    )


def plan_audit(specs, options: AuditOptions) -> list[PlannedTarget]:
    """Build every target and plan its probes: all user errors surface here, before any work is saved."""
    return [plan_target(spec, i, options) for i, spec in enumerate(specs)]


def run_audit(specs_or_planned, options: AuditOptions, log=None) -> list[TargetResult]:
    """Audit planned targets (or plan the given specs first), printing what each probe will run."""
    log = log or (lambda msg: print(msg, file=sys.stderr))
    planned = list(specs_or_planned)
    if planned and not isinstance(planned[0], PlannedTarget):
        planned = plan_audit(planned, options)
    for line in preflight_lines(planned):
        log(line)
    return [audit_target(p, options, log) for p in planned]


def preflight_lines(planned: list[PlannedTarget]) -> list[str]:
    """What each probe will run: trials per world and the estimated time (from a first batch)."""
    lines = []
    for target in planned:
        for p in target.probes:
            head = f"  [{target.target.spec.name}] {p.spec.name} ({p.spec.kind}): "
            if p.probe is None:
                lines.append(head + f"declined: {p.reason}")
                continue
            if getattr(p.probe, "one_run", False):
                lines.append(head + f"one run with {p.trials} canaries in this process")
                continue
            where = {"processes": f"on {p.workers} worker processes", "inprocess": "in this process"}.get(
                p.executor, f"on {p.executor}"
            )
            estimate = "" if p.wall_estimate is None else f", about {max(1.0, p.wall_estimate):.0f} s"
            lines.append(head + f"{p.trials} trials per world {where}{estimate}")
    return (["plan (before any work):"] + lines) if lines else []
