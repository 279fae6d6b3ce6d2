"""The Flower example app as an audit target (``algorithm = "dp-flower"``; needs the ``flower`` extra).

The target's mechanism is what Flower runs: fixed-size sampling of m of the N connected nodes without
replacement, replace-one neighbours (sensitivity 2C), noise multiplier z, one release per round; the
accounting section accounts it like any other target. Its own probe is one run of the app on Flower's
simulation engine (``dpfed.flower.audit.audit_example``): the configuration check, the transcript check
and the canary clients. The probe section holds the canaries' one-run lower bounds (both threat models,
``reports.audit.flower_canaries``) and decides VIOLATION when the rigorous one exceeds the claim; every
configuration and transcript finding becomes a report finding (``flower-check``), and a critical one makes
the target a VIOLATION (``verdicts.with_critical_findings``).
"""

from __future__ import annotations

from accounting import strict
from accounting.errors import ConfigurationError
from accounting.mechanisms import Neighbouring, Sampling, SubsampledGaussian
from reports.audit.model import Finding, ProbeSection, TargetSpec, Unavailable
from reports.audit.targets import BaseTarget, register

SCHEMA = {
    "nodes": strict.INTEGER,
    "canaries": strict.INTEGER,
    "sampled": strict.Kind("whole number or \"all\"", (int, str)),
    "rounds": strict.INTEGER,
    "noise_multiplier": strict.NUMBER,
    "clip": strict.NUMBER,
    "hidden": strict.INTEGER,
    "local_steps": strict.INTEGER,
    "learning_rate": strict.NUMBER,
    "bug": strict.STRING,
    "claims": strict.STRINGS,
    "transcript_alpha": strict.NUMBER,
}
PROBE_NAME = "flower-canaries"


def settings_from(parameters: dict, seed: int = 0):
    """``AppSettings`` from a target's (type-checked) parameter table; ``sampled = "all"``: every client."""
    from dpfed.flower.example_app import AppSettings

    p = dict(parameters)
    for key in ("claims", "transcript_alpha"):
        p.pop(key, None)
    sampled = p.pop("sampled", 8)
    nodes, canaries = p.get("nodes", 40), p.get("canaries", 0)
    if sampled == "all":
        sampled = nodes + canaries
    elif not isinstance(sampled, int) or isinstance(sampled, bool):
        raise ConfigurationError("parameters.sampled", f"expected a whole number or 'all', got {sampled!r}")
    try:
        return AppSettings(**p, sampled=sampled, seed=seed)
    except ConfigurationError as exc:
        raise ConfigurationError(f"parameters.{exc.field}", str(exc).split(": ", 1)[-1]) from None


@register
class FlowerTarget(BaseTarget):
    """The Flower example app (``dpfed.flower.example_app``) audited on Flower's own runtime."""

    algorithms = ("dp-flower",)
    binders: dict = {}
    own_probes = 1

    def __init__(self, spec: TargetSpec):
        super().__init__(spec)
        from dpfed.flower.config import parse_claims
        from dpfed.flower.example_app import supernodes

        p = strict.check_table("parameters", dict(spec.parameters), SCHEMA)
        self.settings = settings_from(p)
        self.claims = parse_claims(p.get("claims", ()), "parameters.claims")
        self.alpha = float(p.get("transcript_alpha", 1e-3))
        if not 0 < self.alpha < 1:
            raise ConfigurationError("parameters.transcript_alpha", "must lie in (0, 1)")
        s, population = self.settings, supernodes(self.settings)
        self.releases = s.rounds
        self.mechanism = SubsampledGaussian(s.sampled / population, s.noise_multiplier, s.clip,
                                            sampling=Sampling.FIXED_SIZE, neighbouring=Neighbouring.REPLACE_ONE,
                                            population=population)
        self._audit = None

    def default_units(self):
        return self.settings.nodes + self.settings.canaries, "clients"

    def report_parameters(self) -> dict:
        return {**{k: v for k, v in self.settings.__dict__.items() if k != "seed"}, "claims": list(self.claims),
                "runtime": "Flower simulation engine (flwr.simulation.run_simulation)"}

    def utility(self, seed, runs: int, log):
        return Unavailable("the Flower audit reports the run's findings and canary bounds, not a utility curve")

    def own_probe_sections(self, seed: int, confidence: float, log) -> tuple:
        """Run the app once on Flower (the configuration and transcript checks and the canaries) and return
        the canary probe section; the checks' findings are kept for ``findings``."""
        import dataclasses

        from dpfed.flower.audit import audit_example

        try:
            import flwr  # noqa: F401
        except ModuleNotFoundError:
            return (ProbeSection(PROBE_NAME, "end-to-end", "failed",
                                 "flwr is not installed (pip install -c constraints.txt -e '.[flower]')"),)
        log(f"[{self.spec.name}] Flower run ({self.settings.rounds} rounds, {self.settings.nodes} clients, "
            f"{self.settings.canaries} canaries)")
        settings = dataclasses.replace(self.settings, seed=int(seed) % (2 ** 31))
        # A replace-one claim is also checked against what Flower's sampler provably spends (the realised
        # pair): below it, a critical finding; between it and the RDP row, a medium one (the accountants, which
        # prove claims, have no tight figure for fixed-size sampling).
        claimed = self.claim.epsilon if self.claim.neighbouring == "replace-one" else None
        self._audit = audit_example(settings, self.claim.delta, self.claims, claimed, self.alpha)
        return (canary_section(self._audit, self.claim, confidence),)

    def findings(self, verdict, probes) -> list:
        if self._audit is None:
            return []
        out = [Finding("flower-check", f["severity"], {"code": f["code"], "message": f["message"], **f["values"]})
               for f in self._audit["configuration_findings"] + self._audit["transcript_findings"]]
        rows = self._audit["rows"]
        out.append(Finding("flower-check", "info", {
            "code": "accounted-rows", **{f"{name}_epsilon": row["epsilon"] for name, row in rows.items()},
            "message": "what Flower runs (fixed-size without replacement, replace-one, z/2 to the accountant) spends "
                       f"epsilon {rows['runs']['epsilon']:.4g} ({rows['runs']['accountant']}); Flower's accountant "
                       f"without amplification would report {rows['no-amplification']['epsilon']:.4g}, Poisson at "
                       f"m/N {rows['poisson']['epsilon']:.4g}, replace-one with z unchanged "
                       f"{rows['z-unchanged']['epsilon']:.4g}"}))
        if not self._audit["transcript_findings"]:
            out.append(Finding("flower-check", "info", {
                "code": "transcript-passes", "releases": self.settings.rounds,
                "message": f"transcript check: all {self.settings.rounds} recorded releases match the accountant's "
                           "assumptions (fixed-size sampling, equal weights, clip, noise std z C / m)"}))
        canaries = self._audit.get("canaries")
        if canaries:
            out.append(Finding("flower-check", "info", canary_estimate_values(canaries, self._audit)))
        return out


def canary_estimate_values(canaries: dict, audit: dict) -> dict:
    accounted, realised = audit["accounted_epsilon"], audit["realised_epsilon"]
    parts = []
    values = {"code": "canary-estimate", "accounted_epsilon": accounted, "realised_epsilon": realised}
    for model in ("final_model", "all_iterates"):
        e = canaries[model]["estimate"]
        values[f"{model}_epsilon"], values[f"{model}_mu"] = e["epsilon"], e["mu"]
        parts.append(f"{model.replace('_', ' ')} mean-shift epsilon {e['epsilon']:.4g} (mu {e['mu']:.3g})")
    measured = canaries.get("measured_shift")
    if measured and measured["participations"]:
        values["measured_shift_epsilon"], values["measured_shift"] = measured["estimate"]["epsilon"], measured["shift"]
        parts.append(f"measured-shift epsilon {measured['estimate']['epsilon']:.4g} (shift {measured['shift']:.3g} "
                     f"per round against 1/z = {measured['configured_shift']:.3g}, {measured['participations']} "
                     "canary-rounds)")
    values["message"] = (f"canary estimates (not bounds): {'; '.join(parts)}; what Flower runs spends at least "
                         f"{realised:.4g} (the replace-one pair its sampler realises) and at most {accounted:.4g}")
    return values


def canary_section(audit: dict, claim, confidence: float) -> ProbeSection:
    """The canary probe's section: bounds of both threat models and the one-run verdict against the claim."""
    from reports.audit.flower_canaries import canary_bounds

    settings = audit["settings"]
    canaries = audit.get("canaries")
    if not canaries:
        return ProbeSection(PROBE_NAME, "end-to-end", "declined", "no canaries (set parameters.canaries)")
    bounds = canary_bounds(canaries, claim.delta, confidence)
    status, p_value, ceiling = one_run_decision(bounds, canaries, claim, confidence)
    return ProbeSection(
        name=PROBE_NAME, kind="end-to-end", outcome="ran",
        threat_model="final model and all iterates (each canary's cosine with the final delta, and with every "
                     "round's normalised delta summed)",
        description=f"{len(canaries['signs'])} canary clients answering current + s C u (secret sign s), one Flower "
                    f"run of {settings['rounds']} rounds; signs guessed from the cosines",
        trials=len(canaries["signs"]), seed=int(settings["seed"]),
        params={k: settings[k] for k in ("nodes", "canaries", "sampled", "rounds", "noise_multiplier", "clip")},
        bounds=tuple({**b, "delta": claim.delta} for b in bounds),
        status=status, p_value=p_value, ceiling=ceiling, confidence=confidence)


def one_run_decision(bounds: list[dict], canaries: dict, claim, confidence: float):
    """(status, p-value, ceiling) of the rigorous one-run bounds against the claim: VIOLATION when the
    Bonferroni-combined p-value of "(epsilon, delta)-DP" is at most 1 - confidence."""
    from attacks.estimators.one_run import one_run_ceiling, one_run_p_value

    rigorous = [b for b in bounds if b["rigorous"]]
    p_values = []
    for b in rigorous:
        d = b["details"]
        p = one_run_p_value(claim.epsilon, claim.delta, d["canaries"], d["guesses"], d["correct"])
        p_values.append(min(1.0, p * d.get("corrected_for", 1)))
    p_value = min(1.0, len(p_values) * min(p_values)) if p_values else None
    ceiling = one_run_ceiling(len(canaries["signs"]), claim.delta, 1 - (1 - confidence) / max(1, len(rigorous)))
    if p_value is not None and p_value <= 1.0 - confidence:
        return "VIOLATION", p_value, ceiling
    return ("UNTESTABLE" if ceiling <= claim.epsilon else "CONSISTENT"), p_value, ceiling
