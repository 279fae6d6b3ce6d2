"""The DP-DUETS target (our private variant of DUETS, notes A.9) and the seed's non-private DUETS.

DP-DUETS releases one ``SubsampledGaussian`` sum per completed epoch (agent level: one release per epoch, all
with the same rate and noise multiplier; only the public clip C_j differs, which does not change the privacy
loss) or one release for the whole run (reward level). ``attacks.probes.duets.audit_mechanism`` gives that
composition; the target accounts ``mechanism`` (the first epoch's) ``releases`` times, which is the same
privacy loss. Non-private DUETS adds no noise (``mechanism`` None).
"""

from __future__ import annotations

import numpy as np

from accounting.errors import ConfigurationError
from accounting.mechanisms import Neighbouring
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

# DuetsConfig fields the end-to-end probe carries (under its own names where they differ)
END_TO_END_FIELDS = {
    "objective": "objective",
    "num_agents": "agents",
    "horizon": "horizon",
    "candidates": "candidates",
    "unit": "unit",
    "noise_multiplier": "noise_multiplier",
    "reward_clip": "reward_clip",
    "agent_clip": "agent_clip",
    "clip_scale": "clip_scale",
    "elimination": "elimination",
}
# fields that do not change what the probes replay (the algorithm is the probe's `private`; the
# neighbouring relation is checked on its own; dp_delta only states epsilon in run reports)
IGNORED = ("algorithm", "neighbouring", "dp_delta")


def _privacy_of(composition) -> set:
    return {(m.rate, m.noise_multiplier, m.neighbouring, m.sampling) for m, _ in composition.parts}


@register
class DuetsTarget(BaseTarget):
    """DP-DUETS (ours) and DUETS: a ``DuetsConfig`` and the composition its run releases."""

    algorithms = ("dp-duets", "duets")
    binders = {
        "dp-duets-release": "_release_probe",
        "dp-duets-release-reward": "_release_probe",
        "dp-duets-end-to-end": "_end_to_end_probe",
        "dp-duets-end-to-end-reward": "_end_to_end_probe",
        "duets-end-to-end": "_end_to_end_probe",
    }

    @classmethod
    def parameter_schema(cls) -> dict:
        from dpfed.duets.config import DuetsConfig

        return schema_of_dataclass(DuetsConfig)

    def __init__(self, spec: TargetSpec):
        from attacks.probes.duets import audit_mechanism
        from dpfed.duets.config import DuetsConfig

        super().__init__(spec)
        params, _ = split_parameters(spec, self.parameter_schema(), {})
        params.setdefault("algorithm", spec.algorithm)
        if params["algorithm"] != spec.algorithm:
            raise ConfigurationError(
                "parameters.algorithm", f"{params['algorithm']!r} differs from the target's {spec.algorithm!r}"
            )
        params.setdefault("neighbouring", spec.claim.neighbouring)
        self.config = DuetsConfig.from_dict(params)
        self.private = self.config.private
        from dpfed.duets.schedule import completed_epochs

        # non-private DUETS broadcasts the same sums, unnoised
        self.releases = max(1, completed_epochs(self.config.horizon, self.config.first_epoch))
        self.mechanism, self._composition = None, None
        if self.private:
            self._composition, _ = audit_mechanism(self.config, spec.claim.delta)
            if len(_privacy_of(self._composition)) != 1:
                raise ConfigurationError("parameters", "the epochs' releases differ in rate or noise")
            self.mechanism, self.releases = self._composition.parts[0][0], self._composition.total_count

    def composition(self):
        return self._composition

    def default_units(self) -> tuple[int | None, str]:
        if self.config.unit == "reward":
            return self.config.num_agents * self.config.horizon, "rewards"
        return self.config.num_agents, "agents"

    def report_parameters(self) -> dict:
        c = self.config
        out = {
            "objective": c.objective,
            "agents": c.num_agents,
            "horizon": c.horizon,
            "candidates": c.candidates,
            "elimination": c.elimination,
            "private": self.private,
        }
        if self.private:
            out.update(
                unit=c.unit,
                rate=c.rate,
                noise_multiplier=c.noise_multiplier,
                reward_clip=c.reward_clip,
                agent_clip=c.agent_clip,
                neighbouring=c.neighbouring_relation.value,
                releases=" + ".join(f"{describe(m)} x {k}" for m, k in self._composition.parts),
            )
        return {**out, "mechanism": "no noise" if self.mechanism is None else describe(self.mechanism)}

    def _release_probe(self, name: str, explicit: dict) -> dict:
        """One epoch's release (the first: a subset of the releases, so its bound is a valid lower bound)."""
        if not self.private:
            raise ProbeDeclined(f"{name} attacks the noisy release of DP-DUETS; DUETS releases its sums unnoised")
        decline_preset_mismatch(name, unit=self.config.unit)
        if self.config.unit == "agent" and self.mechanism.neighbouring is not Neighbouring.ADD_REMOVE:
            raise ProbeDeclined(f"{name} plays add/remove worlds; the claim is for replace-one neighbours")
        c = self.config
        return {
            "unit": c.unit,
            "noise_multiplier": c.noise_multiplier,
            "rate": c.rate,
            "epoch_length": c.first_epoch,
            "agents": c.num_agents,
            "reward_clip": c.reward_clip,
            "agent_clip": c.agent_clip,
            "clip_scale": c.clip_scale,
            "delta": self.claim.delta,
        }

    def _end_to_end_probe(self, name: str, explicit: dict) -> dict:
        c = self.config
        decline_preset_mismatch(name, private=self.private, unit=c.unit)
        if c.unit == "agent" and c.elimination != "off":
            raise ProbeDeclined(
                f"{name} replays agent level only with elimination = 'off'; this target eliminates ({c.elimination})"
            )
        if c.unit == "agent" and self.private and c.neighbouring_relation is not Neighbouring.ADD_REMOVE:
            raise ProbeDeclined(f"{name} plays add/remove worlds; the claim is for replace-one neighbours")
        if c.rate != 1.0:
            raise ProbeDeclined(f"{name} releases every agent's statistic; this target samples at rate {c.rate}")
        decline_uncarried_fields(name, c, set(END_TO_END_FIELDS) | {"rate"}, IGNORED)
        return {
            **{probe: getattr(c, field) for field, probe in END_TO_END_FIELDS.items()},
            "private": self.private,
            "delta": self.claim.delta,
        }

    def utility(self, seed, runs: int, log):
        from dpfed.duets import run_duets
        from dpfed.duets.schedule import epoch_lengths

        curves = []
        for run, stream in enumerate(seed.spawn(runs)):
            log(f"  utility run {run + 1}/{runs}")
            curves.append(np.asarray(run_duets(self.config, stream).regret, dtype=float))
        rounds = np.arange(1, len(curves[0]) + 1)
        ends = np.cumsum(epoch_lengths(self.config.horizon, self.config.first_epoch))
        released = np.searchsorted(ends, rounds, side="right")  # epochs completed by each step
        released = np.minimum(released, self.releases)  # an epoch ending at the horizon sends nothing
        context = {"objective": self.config.objective, "agents": self.config.num_agents}
        return regret_utility(self, "cumulative regret (summed over agents)", np.array(curves), released, context)
