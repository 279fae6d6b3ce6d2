"""The DP-FedZero target (our private variants, notes B.5) and the seed's non-private FedZero.

DP-FedZero releases, per unit (a worker, or one record of a worker), one ``SubsampledGaussian`` per round:
``dpfed.fedzero.dp_fedzero_release`` gives that composition from the same ``dp_uplink`` the run uses.
Non-private FedZero adds no noise (``mechanism`` None); its target also answers the seed's remark that
FedZero "may offer privacy-preserving benefits" with a ``privacy-remark`` finding from its probe.
"""

from __future__ import annotations

import numpy as np

from accounting import strict
from accounting.errors import ConfigurationError, require_number
from reports.audit.accounting import describe
from reports.audit.model import Finding, TargetSpec
from reports.audit.targets import (
    BaseTarget,
    ProbeDeclined,
    decline_preset_mismatch,
    decline_uncarried_fields,
    register,
    regret_utility,
    schema_of_dataclass,
    split_parameters,
)

PRIVACY = {
    "unit": strict.STRING,
    "noise": strict.STRING,
    "rate": strict.NUMBER,
    "noise_multiplier": strict.NUMBER,
    "clip": strict.NUMBER,
}
DEFAULT_PRIVACY = {"unit": "worker", "noise": "scalar", "rate": 1.0, "noise_multiplier": 1.0, "clip": 1.0}
END_TO_END_FIELDS = ("geometry", "dim", "workers", "records", "rounds", "step")
# the end-to-end probes of non-private FedZero: their result answers the seed's privacy remark
REMARK_PROBES = ("fedzero-nonprivate", "fedzero-broadcast-leak")
BROADCAST_PROBES = ("fedzero-broadcast", "fedzero-broadcast-leak")
CEILING_REACHED = 0.999  # a lower bound within 0.1% of the estimator's ceiling has reached it


@register
class FedZeroTarget(BaseTarget):
    """DP-FedZero (ours) and FedZero: a ``FedZeroConfig`` and, if private, the uplink's composition."""

    algorithms = ("dp-fedzero", "fedzero")
    binders = {
        "fedzero-scalar": "_scalar_probe",
        "fedzero-end-to-end": "_end_to_end_probe",
        "fedzero-record": "_end_to_end_probe",
        "fedzero-broadcast": "_end_to_end_probe",
        "fedzero-nonprivate": "_end_to_end_probe",
        "fedzero-broadcast-leak": "_end_to_end_probe",
    }

    @classmethod
    def parameter_schema(cls) -> dict:
        from dpfed.fedzero.config import FedZeroConfig

        return schema_of_dataclass(FedZeroConfig, PRIVACY)

    def __init__(self, spec: TargetSpec):
        from dpfed.fedzero.config import FedZeroConfig
        from dpfed.fedzero.private import dp_fedzero_release

        super().__init__(spec)
        params, privacy = split_parameters(spec, self.parameter_schema(), PRIVACY)
        self.private = spec.algorithm == "dp-fedzero"
        self.privacy = {**DEFAULT_PRIVACY, **privacy}
        if self.private and spec.claim.neighbouring != "add-remove":
            raise ConfigurationError("claim.neighbouring", "DP-FedZero adds or removes one unit: use add-remove")
        self.config = FedZeroConfig(**params)
        self.mechanism, self.releases = None, self.config.rounds
        if self.private:
            require_number("parameters.noise_multiplier", self.privacy["noise_multiplier"], low=0, low_open=True)
            composition, _ = dp_fedzero_release(self.config, spec.claim.delta, **self.privacy)
            self.mechanism = composition.parts[0][0]

    def default_units(self) -> tuple[int | None, str]:
        if self.private and self.privacy["unit"] == "record":
            return self.config.workers * self.config.records, "records"
        return self.config.workers, "workers"

    def report_parameters(self) -> dict:
        c = self.config
        out = {"geometry": c.geometry, "dim": c.dim, "workers": c.workers, "rounds": c.rounds, "records": c.records}
        out.update(estimator=c.estimator, randomisation=c.randomisation, private=self.private)
        if self.private:
            out.update(self.privacy)
        mechanism = "no noise" if self.mechanism is None else describe(self.mechanism)
        return {**out, "mechanism": mechanism, "releases": self.releases}

    def _scalar_probe(self, name: str, explicit: dict) -> dict:
        if not self.private or self.privacy["unit"] != "worker" or self.privacy["noise"] != "scalar":
            raise ProbeDeclined(f"{name} attacks worker-level scalar noise; this target is {self._setting()}")
        p = self.privacy
        rate, sigma, clip = p["rate"], p["noise_multiplier"], p["clip"]
        return {
            "rate": rate,
            "noise_multiplier": sigma,
            "clip": clip,
            "rounds": self.releases,
            "delta": self.claim.delta,
        }

    def _setting(self) -> str:
        if not self.private:
            return "non-private FedZero"
        return f"{self.privacy['unit']} level with {self.privacy['noise']} noise"

    def _end_to_end_probe(self, name: str, explicit: dict) -> dict:
        p = self.privacy
        decline_preset_mismatch(name, private=self.private, unit=p["unit"])
        if p["noise"] != "scalar":
            raise ProbeDeclined(f"{name} replays scalar noise; this target is {self._setting()}")
        decline_uncarried_fields(name, self.config, END_TO_END_FIELDS)
        c = self.config
        if name in BROADCAST_PROBES and (c.geometry != "l2" or c.workers > c.dim):
            raise ProbeDeclined(
                f"{name} solves the scalars from the iterates: it needs the l2 geometry and workers <= dim"
            )
        out = {field: getattr(self.config, field) for field in END_TO_END_FIELDS}
        if self.private:
            out.update(unit=p["unit"], rate=p["rate"], noise_multiplier=p["noise_multiplier"], clip=p["clip"])
        return {**out, "private": self.private, "delta": self.claim.delta}

    def findings(self, verdict, probes) -> list:
        """FedZero's closing remark ("may offer privacy-preserving benefits") against its probe's result."""
        if self.private:
            return []
        ran = [p for p in probes if p.outcome == "ran" and p.name in REMARK_PROBES and p.ceiling]
        if not ran:
            return []
        best = max(ran, key=lambda p: (p.best_rigorous() or {"epsilon": 0.0})["epsilon"])
        bound = (best.best_rigorous() or {"epsilon": 0.0})["epsilon"]
        values = {
            "probe": best.name,
            "threat_model": best.threat_model,
            "lower_bound": bound,
            "ceiling": best.ceiling,
            "trials": best.trials,
            "reaches_ceiling": bound >= CEILING_REACHED * best.ceiling,
            "claim_epsilon": self.claim.epsilon,
        }
        severe = values["reaches_ceiling"] or bound > self.claim.epsilon
        return [Finding("privacy-remark", "high" if severe else "info", values)]

    def utility(self, seed, runs: int, log):
        from dpfed.fedzero.algorithm import run_fedzero
        from dpfed.fedzero.private import dp_uplink

        uplink = dp_uplink(self.config, **self.privacy) if self.private else None
        log(f"  utility: {runs} run(s), vectorised")
        run = run_fedzero(self.config, seed, uplink=uplink, runs=runs, record_transcript=False)
        curves = np.asarray(run.regret, dtype=float)  # (runs, rounds): one release per round
        rounds = np.arange(1, curves.shape[1] + 1)
        c = self.config
        return regret_utility(self, "cumulative regret", curves, rounds, {"geometry": c.geometry, "workers": c.workers})
