"""The DP-FKM target (our private variants, notes C.5) and the seed's non-private FKM.

Event level: the whole run is one ``Gaussian`` release (each loss enters one release); dataset level:
``horizon`` releases of a ``SubsampledGaussian`` over the records. ``dpfed.fkm.dp_fkm_release`` builds the
mechanism the run uses. Non-private FKM adds no noise (``mechanism`` None).
"""

from __future__ import annotations

import numpy as np

from accounting import strict
from accounting.errors import ConfigurationError
from accounting.mechanisms import Composition
from reports.audit.accounting import describe
from reports.audit.model import TargetSpec
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
    "epsilon": strict.NUMBER,
    "noise_multiplier": strict.NUMBER,
    "rate": strict.NUMBER,
    "records": strict.INTEGER,
}
EVENT_CARRIED = ("dim", "horizon", "exploration", "step")
BOUND_CARRIED = ("lipschitz", "radius")  # B = lipschitz x radius; the event-level probes clip to the target's B


@register
class FkmTarget(BaseTarget):
    """DP-FKM (ours) and FKM: an ``FKMConfig`` and, if private, the feedback's mechanism."""

    algorithms = ("dp-fkm", "fkm")
    binders = {
        "fkm-loss": "_loss_probe",
        "fkm-end-to-end": "_end_to_end_probe",
        "fkm-nonprivate": "_end_to_end_probe",
        "fkm-dataset-end-to-end": "_dataset_probe",
    }

    @classmethod
    def parameter_schema(cls) -> dict:
        from dpfed.fkm.config import FKMConfig

        return schema_of_dataclass(FKMConfig, PRIVACY)

    def __init__(self, spec: TargetSpec):
        from dpfed.fkm.config import FKMConfig
        from dpfed.fkm.private import dp_fkm_release

        super().__init__(spec)
        params, privacy = split_parameters(spec, self.parameter_schema(), PRIVACY)
        self.private = spec.algorithm == "dp-fkm"
        self.unit = privacy.pop("unit", "event")
        self.records = int(privacy.pop("records", 200))
        self.privacy = {"epsilon": spec.claim.epsilon, "noise_multiplier": None, "rate": 0.1, **privacy}
        if self.private and self.unit == "dataset" and spec.claim.neighbouring != "add-remove":
            raise ConfigurationError("claim.neighbouring", "dataset-level DP-FKM adds or removes a record")
        self.config = FKMConfig(**params)
        self.mechanism, self.releases = None, self.config.horizon
        if self.private:
            release, _ = dp_fkm_release(self.config, spec.claim.delta, self.unit, **self.privacy)
            self.mechanism = release.parts[0][0] if isinstance(release, Composition) else release
            self.releases = self.config.horizon if self.unit == "dataset" else 1

    def default_units(self) -> tuple[int | None, str]:
        if self.private and self.unit == "dataset":
            return self.records, "records"
        return self.config.horizon, "losses"

    def report_parameters(self) -> dict:
        c = self.config
        out = {"dim": c.dim, "horizon": c.horizon, "loss": c.loss, "private": self.private}
        if self.private:
            out.update(unit=self.unit, **({"records": self.records} if self.unit == "dataset" else {}))
        mechanism = "no noise" if self.mechanism is None else describe(self.mechanism)
        return {**out, "mechanism": mechanism, "releases": self.releases}

    def _event_level(self, name: str) -> None:
        if self.private and self.unit != "event":
            raise ProbeDeclined(f"{name} attacks one loss (event level); this target is dataset level")

    def _loss_probe(self, name: str, explicit: dict) -> dict:
        self._event_level(name)  # one clipped loss plus the target's noise: the loss family does not matter
        bound = {field: getattr(self.config, field) for field in BOUND_CARRIED}
        return {**self._noise(), **bound, "private": self.private, "delta": self.claim.delta}

    def _noise(self) -> dict:
        """What the probes build their mechanism from: the target's own parameters (epsilon, or a configured
        noise multiplier), so ``event_mechanism`` calibrates it as a run does and a bug in that calibration
        reaches the probes (issue 21's mutation score: passing the calibrated multiplier hid one)."""
        if not self.private:
            return {}
        return {"epsilon": self.privacy["epsilon"], "noise_multiplier": self.privacy["noise_multiplier"]}

    def _end_to_end_probe(self, name: str, explicit: dict) -> dict:
        """The whole run, the canary at mid-run (the configuration may name another ``canary_round``)."""
        self._event_level(name)
        decline_preset_mismatch(name, private=self.private)
        decline_uncarried_fields(name, self.config, EVENT_CARRIED + BOUND_CARRIED)
        if self.config.horizon < 2:
            raise ProbeDeclined(f"{name} reads a loss from the next play; this target plays one round")
        carried = {field: getattr(self.config, field) for field in EVENT_CARRIED + BOUND_CARRIED}
        return {
            **carried,
            **self._noise(),
            "canary_round": self.config.horizon // 2,
            "private": self.private,
            "delta": self.claim.delta,
        }

    def _dataset_probe(self, name: str, explicit: dict) -> dict:
        if not (self.private and self.unit == "dataset"):
            raise ProbeDeclined(f"{name} attacks dataset-level DP-FKM; this target is not")
        decline_uncarried_fields(name, self.config, EVENT_CARRIED)
        return {
            **{field: getattr(self.config, field) for field in EVENT_CARRIED},
            "rate": self.mechanism.rate,
            "noise_multiplier": self.mechanism.noise_multiplier,
            "records": self.records,
            "delta": self.claim.delta,
        }

    def utility(self, seed, runs: int, log):
        from dpfed.fkm.algorithm import run_fkm
        from dpfed.fkm.private import run_dp_fkm

        log(f"  utility: {runs} run(s), vectorised")
        if self.private:
            extra = {"records": self.records} if self.unit == "dataset" else {}
            run = run_dp_fkm(self.config, seed, unit=self.unit, mechanism=self.mechanism, runs=runs, **extra)
        else:
            run = run_fkm(self.config, seed, runs=runs)
        curves = np.asarray(run.regret, dtype=float)  # (runs, horizon)
        released = np.minimum(np.arange(1, curves.shape[1] + 1), self.releases)
        context = {"dim": self.config.dim, "loss": self.config.loss}
        return regret_utility(self, "cumulative regret", curves, released, context)
