"""A bare mechanism target: a Gaussian, a Laplace or a subsampled Gaussian, released ``steps`` times."""

from __future__ import annotations

from accounting import strict
from accounting.errors import ConfigurationError, require_number
from accounting.mechanisms import Gaussian, Laplace, Neighbouring, Sampling, SubsampledGaussian
from reports.audit.accounting import describe, gaussian_for
from reports.audit.model import TargetSpec, Unavailable
from reports.audit.targets import BaseTarget, ProbeDeclined, decline_unless_add_remove_poisson, register

TYPES = ("gaussian", "laplace", "subsampled-gaussian")
SCHEMA = {
    "type": strict.STRING,
    "calibration": strict.STRING,
    "steps": strict.INTEGER,
    "noise_multiplier": strict.NUMBER,
    "sensitivity": strict.NUMBER,
    "rate": strict.NUMBER,
    "clip": strict.NUMBER,
    "sampling": strict.STRING,
    "population": strict.INTEGER,
}
ONLY_FOR = {
    "sensitivity": ("gaussian", "laplace"),
    "calibration": ("gaussian",),
    "rate": ("subsampled-gaussian",),
    "clip": ("subsampled-gaussian",),
    "sampling": ("subsampled-gaussian",),
    "population": ("subsampled-gaussian",),
}


def _mechanism(p: dict, claim):
    """The described mechanism of a parameter table (already type-checked)."""
    kind = p.get("type", "gaussian")
    if kind not in TYPES:
        raise ConfigurationError("parameters.type", f"unknown mechanism {kind!r}; choose {', '.join(TYPES)}")
    for key, kinds in ONLY_FOR.items():
        if key in p and kind not in kinds:
            raise ConfigurationError(f"parameters.{key}", f"not a parameter of a {kind} mechanism")
    if "calibration" in p:
        if "noise_multiplier" in p:
            raise ConfigurationError("parameters.calibration", "give calibration or noise_multiplier, not both")
        mech = gaussian_for(claim.epsilon, claim.delta, p["calibration"])
        return Gaussian(mech.noise_multiplier, p.get("sensitivity", 1.0))
    if "noise_multiplier" not in p:
        raise ConfigurationError(
            "parameters.noise_multiplier",
            "a bare mechanism needs its noise multiplier (or calibration = 'classic'|'analytic')",
        )
    if kind == "gaussian":
        return Gaussian(p["noise_multiplier"], p.get("sensitivity", 1.0))
    if kind == "laplace":
        return Laplace(p["noise_multiplier"], p.get("sensitivity", 1.0))
    return SubsampledGaussian(
        p.get("rate", 1.0),
        p["noise_multiplier"],
        p.get("clip", 1.0),
        p.get("sampling", "poisson"),
        claim.neighbouring,
        p.get("population"),
    )


@register
class MechanismTarget(BaseTarget):
    """A mechanism on its own (no algorithm around it, so no utility run)."""

    algorithms = ("mechanism",)
    binders = {
        "gaussian": "_gaussian_probe",
        "bug-weak-noise": "_gaussian_probe",
        "laplace": "_laplace_probe",
        "subsampled-gaussian": "_subsampled_probe",
        "bug-no-clip": "_subsampled_probe",
        "empty-sample": "_subsampled_probe",
        "bug-uniform-fallback": "_subsampled_probe",
    }

    @classmethod
    def parameter_schema(cls) -> dict:
        return SCHEMA

    def __init__(self, spec: TargetSpec):
        super().__init__(spec)
        p = strict.check_table("parameters", dict(spec.parameters), self.parameter_schema())
        self.kind = p.get("type", "gaussian")
        self.calibration_method = p.get("calibration")
        self.releases = int(require_number("parameters.steps", p.get("steps", 1), low=1, integer=True))
        try:
            self.mechanism = _mechanism(p, spec.claim)
        except ConfigurationError as exc:
            field = exc.field if exc.field.startswith("parameters") else f"parameters.{exc.field}"
            raise ConfigurationError(field, str(exc).split(": ", 1)[-1]) from None

    def calibration(self) -> str | None:
        return self.calibration_method

    def report_parameters(self) -> dict:
        out = {"type": self.kind, "mechanism": describe(self.mechanism), "releases": self.releases}
        if self.calibration_method:
            out["calibration"] = self.calibration_method
        return out

    def utility(self, seed, runs: int, log):
        return Unavailable("a bare mechanism has no utility to measure")

    def _one_release(self, name: str, kind: type) -> None:
        if not isinstance(self.mechanism, kind):
            raise ProbeDeclined(
                f"{name} attacks a {kind.__name__} mechanism; this target is {type(self.mechanism).__name__}"
            )
        if self.releases != 1:
            raise ProbeDeclined(f"{name} attacks one release; this target composes {self.releases}")

    def _gaussian_probe(self, name: str, explicit: dict) -> dict:
        self._one_release(name, Gaussian)
        m = self.mechanism
        return {
            "epsilon": self.claim.epsilon,
            "delta": self.claim.delta,
            "noise_multiplier": m.noise_multiplier,
            "sensitivity": m.sensitivity,
            # the target's (its noise_multiplier is bound, so the probe's own calibration would be ignored
            # and its default "analytic" shown beside a classic sigma); None where the noise is given
            "calibration": self.calibration_method,
        }

    def _laplace_probe(self, name: str, explicit: dict) -> dict:
        self._one_release(name, Laplace)  # the probe's scale is sensitivity / epsilon
        return {
            "epsilon": 1.0 / self.mechanism.noise_multiplier,
            "delta": self.claim.delta,
            "sensitivity": self.mechanism.sensitivity,
        }

    def _subsampled_probe(self, name: str, explicit: dict) -> dict:
        m = self.mechanism
        if not isinstance(m, SubsampledGaussian):
            raise ProbeDeclined(f"{name} attacks a subsampled Gaussian; this target is {type(m).__name__}")
        if m.neighbouring is not Neighbouring.ADD_REMOVE:
            raise ProbeDeclined(f"{name} plays add/remove worlds; the claim is for replace-one neighbours")
        params = {
            "rate": m.rate,
            "noise_multiplier": m.noise_multiplier,
            "clip": m.clip,
            "rounds": self.releases,
            "delta": self.claim.delta,
            "sampling": m.sampling.value,
        }
        if m.sampling is Sampling.FIXED_SIZE:  # the probe's population is the canary and `others`
            params["others"] = int(m.population) - 1
        else:
            decline_unless_add_remove_poisson(m, name)
        return params
