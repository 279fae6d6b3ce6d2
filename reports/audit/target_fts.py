"""The DP-FTS-DE (and DP-FTS) target: a preset ``FTSConfig`` with overrides, its server mechanism."""

from __future__ import annotations

import numpy as np

from accounting import strict
from accounting.errors import ConfigurationError
from reports.audit.accounting import describe
from reports.audit.model import TargetSpec
from reports.audit.targets import (
    BaseTarget,
    ProbeDeclined,
    decline_unless_add_remove_poisson,
    register,
    schema_of_dataclass,
    utility_curve,
)

DEFAULT_PRESET = "svm-breast-cancer"
# fields of an FTSConfig that shape the server's release beyond rate, noise and rounds
RELEASE_FIELDS = (
    "subregions",
    "sampling",
    "neighbouring",
    "population",
    "weight_gap",
    "weight_hold",
    "weight_decay",
    "algorithm",
)


def _release_fields_differing_from_preset(config, preset: str) -> list[str]:
    """Release-shaping fields whose value in ``config`` differs from preset ``preset``'s."""
    import dataclasses

    from accounting.errors import read_toml
    from dpfed.fts.config import PRESET_DIR, PRESETS

    if preset not in PRESETS:
        raise ConfigurationError("preset", f"unknown {preset!r}; choose one of {', '.join(PRESETS)}")
    stored = read_toml(PRESET_DIR / f"fts_{preset}.toml", "preset")
    defaults = {f.name: f.default for f in dataclasses.fields(config)}
    return [k for k in RELEASE_FIELDS if getattr(config, k) != stored.get(k, defaults[k])]


@register
class FtsTarget(BaseTarget):
    """DP-FTS-DE: the server releases one subsampled Gaussian per round (``FTSConfig.mechanism()``)."""

    algorithms = ("dp-fts-de", "dp-fts")
    binders = {
        "fts-server": "_server_probe",
        "fts-server-reference": "_server_probe",
        "fts-end-to-end": "_end_to_end_probe",
    }

    @classmethod
    def parameter_schema(cls) -> dict:
        from dpfed.fts import FTSConfig

        return schema_of_dataclass(FTSConfig, {"preset": strict.STRING})

    def __init__(self, spec: TargetSpec):
        from dpfed.fts import FTSConfig

        super().__init__(spec)
        params = dict(spec.parameters)
        strict.check_table("parameters", params, self.parameter_schema())
        preset = params.pop("preset", DEFAULT_PRESET)
        params.setdefault("algorithm", spec.algorithm)
        params.setdefault("neighbouring", spec.claim.neighbouring)
        if params["algorithm"] != spec.algorithm:
            raise ConfigurationError(
                "parameters.algorithm",
                f"{params['algorithm']!r} differs from the target's algorithm {spec.algorithm!r}",
            )
        self.preset = preset
        self.config = FTSConfig.from_preset(preset, **params)
        self.mechanism = self.config.mechanism()
        self.releases = self.config.rounds

    def default_units(self) -> tuple[int | None, str]:
        return self.config.num_agents, "agents"

    def report_parameters(self) -> dict:
        c = self.config
        return {
            "preset": self.preset,
            "agents": c.num_agents,
            "rounds": c.rounds,
            "rate": c.rate,
            "noise_multiplier": c.noise_multiplier,
            "clip": c.clip,
            "per_vector_clip": c.per_vector_clip,
            "subregions": c.effective_subregions,
            "sampling": c.sampling,
            "neighbouring": c.neighbouring,
            "weight_schedule": [c.weight_gap, c.weight_hold, c.weight_decay],
            "mechanism": describe(self.mechanism),
            "releases": self.releases,
            **({"planted_bug": c.planted_bug} if c.planted_bug != "none" else {}),
            **({"empty_sample_fallback": c.empty_sample_fallback} if c.empty_sample_fallback != "noise" else {}),
        }

    def _server_probe(self, name: str, explicit: dict) -> dict:
        decline_unless_add_remove_poisson(self.mechanism, name)
        c = self.config
        if c.population is not None and c.population != c.num_agents:
            raise ProbeDeclined(
                f"{name} declares exactly the target's agents; this target declares a "
                f"population of {c.population} for {c.num_agents} agents"
            )
        return {
            "rate": c.rate,
            "noise_multiplier": c.noise_multiplier,
            "rounds": c.rounds,
            "agents": c.num_agents,
            "subregions": c.effective_subregions,
            "clip_total": c.clip,
            "gap": c.weight_gap,
            "hold": c.weight_hold,
            "decay": c.weight_decay,
            "delta": self.claim.delta,
        }

    def _end_to_end_probe(self, name: str, explicit: dict) -> dict:
        """The real run on the probe's preset (the target's, unless the configuration names a cheaper
        one) with the target's rate, noise, rounds, empty-sample fallback and planted bug (if any);
        declined if the target changes another field that shapes the release."""
        decline_unless_add_remove_poisson(self.mechanism, name)
        preset = explicit.get("preset", self.preset)
        changed = _release_fields_differing_from_preset(self.config, preset)
        if changed:
            raise ProbeDeclined(
                f"{name} runs preset {preset!r} with the target's rate, noise, rounds and server code; "
                f"the target also sets {', '.join(changed)}, which the probe cannot"
            )
        return {
            "preset": self.preset,
            "rounds": self.config.rounds,
            "rate": self.config.rate,
            "noise_multiplier": self.config.noise_multiplier,
            "planted_bug": self.config.planted_bug,
            "empty_sample_fallback": self.config.empty_sample_fallback,
        }

    def utility(self, seed, runs: int, log):
        from accounting.rdp import epsilon_curve
        from dpfed.fts import run_fts
        from dpfed.objectives import make_objective

        first, *streams = seed.spawn(runs + 1)
        objective = make_objective(self.config, np.random.default_rng(first))
        curves, released = [], set()
        for run, stream in enumerate(streams):
            log(f"  utility run {run + 1}/{runs}")
            result = run_fts(self.config, np.random.default_rng(stream), mechanism=self.mechanism, objective=objective)
            curves.append(np.asarray(result.utility, dtype=float))
            composition = result.composition()
            released.add(
                "nothing" if composition is None else " + ".join(f"{describe(m)} x {k}" for m, k in composition.parts)
            )
        rounds = np.arange(len(curves[0]))
        spent = epsilon_curve(self.mechanism, np.maximum(rounds, 1), self.claim.delta)
        spent[0] = 0.0
        return utility_curve(
            result.utility_name,
            rounds,
            np.array(curves),
            spent,
            system="dp-fts-de",
            epsilon_accountant="rdp",
            delta=self.claim.delta,
            released=tuple(sorted(released)),
        )
