"""Configuration of one FTS-family run: a validated frozen dataclass, presets and TOML files.

Algorithms: ``ts`` (local Thompson sampling only), ``fts`` (server, P = 1, no privacy), ``fts-de``
(P sub-regions, no privacy), ``dp-fts`` (P = 1 with the subsampled Gaussian), ``dp-fts-de``.
Every bad value raises ``ConfigurationError`` naming the field.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from accounting.errors import ConfigurationError, require_number
from accounting.mechanisms import Neighbouring, Sampling, SubsampledGaussian
from accounting.strict import dataclass_schema, read_strict_toml
from dpfed.config_base import StrictConfig
from dpfed.fts.partition import box_partition
from dpfed.fts.schedules import MIXING_SCHEDULES
from dpfed.fts.server import PLANTED_BUGS

ALGORITHMS = ("ts", "fts", "fts-de", "dp-fts", "dp-fts-de")
OBJECTIVES = ("synthetic", "svm-breast-cancer", "svm-digits", "landmine")
PRESET_DIR = Path(__file__).resolve().parent.parent / "presets"
PRESETS = ("landmine", "svm-breast-cancer", "svm-digits", "synthetic")


# whole-number fields and their smallest allowed values
INTEGER_FIELDS = {
    "num_agents": 1,
    "rounds": 1,
    "init_points": 1,
    "num_features": 1,
    "local_num_features": 1,
    "subregions": 1,
    "weight_hold": 0,
    "weight_decay": 0,
    "candidates": 1,
    "refine_steps": 0,
    "refine_samples": 1,
    "dim": 1,
    "data_seed": 0,
}
# real fields that must be > 0
POSITIVE_FIELDS = (
    "lengthscale",
    "kernel_variance",
    "obs_noise_var",
    "local_lengthscale",
    "local_noise_var",
    "noise_multiplier",
    "clip",
    "gp_lengthscale",
    "objective_noise_var",
)


@dataclass(frozen=True)
class FTSConfig(StrictConfig):
    """All parameters of a run (defaults: the landmine protocol of the DP-FTS-DE reference code)."""

    toml_table = "fts"

    algorithm: str = "dp-fts-de"
    objective: str = "svm-breast-cancer"
    num_agents: int = 29
    rounds: int = 60  # T: BO iterations after initialisation = broadcasts released
    init_points: int = 10
    init: str | None = None  # "subregion" or "whole"; default: subregion for *-de, whole otherwise
    explore_uniform: bool = False  # ts only: query a uniform point with prob. 1 - p_t (ablation, notes 5.6)
    # shared random features (uploads)
    num_features: int = 100
    lengthscale: float = 0.01
    kernel_variance: float = 1.0
    obs_noise_var: float = 1e-6
    # local Thompson-sampling model (a separate RFF model per the reference; fixed hyper-parameters)
    local_lengthscale: float = 0.2
    local_num_features: int = 100
    local_noise_var: float = 1e-4
    # distributed exploration and privacy
    subregions: int = 4
    rate: float = 0.35
    noise_multiplier: float = 1.0
    clip: float = 22.0
    delta: float | None = None  # default num_agents ** -1.1 (the seed's choice; see flaw F1)
    sampling: str = "poisson"
    neighbouring: str = "add-remove"
    # declared agent slots (default num_agents): weights and 1/q use them, not the agents present (flaw F2);
    # audits with a canary declare num_agents + 1 in both worlds (``with_canary_slot``)
    population: int | None = None
    empty_sample_fallback: str = "noise"
    # a deliberate implementation bug of the server, only for audits (dpfed.fts.server.PLANTED_BUGS)
    planted_bug: str = "none"
    mixing: str = "reciprocal"
    weight_gap: float = 15.0
    weight_hold: int = 10
    weight_decay: int = 30
    # acquisition
    candidates: int = 500
    refine_steps: int = 3
    refine_samples: int = 12
    # objective options
    dim: int = 2
    heterogeneity: float = 0.1
    gp_lengthscale: float = 0.1
    objective_noise_var: float = 1e-4
    data_seed: int = 0
    landmine_path: str | None = None

    def __post_init__(self):
        self._check_choices()
        self._check_numbers()
        self._check_objective()
        box_partition(self.dim, self.effective_subregions)  # P must split the domain
        if self.initial_design == "subregion":
            box_partition(self.dim, self.subregions)

    def _check_choices(self) -> None:
        """Every field that names one of a fixed set of choices."""
        for name, allowed in (("algorithm", ALGORITHMS), ("objective", OBJECTIVES), ("mixing", MIXING_SCHEDULES)):
            value = getattr(self, name)
            if value not in allowed:
                raise ConfigurationError(name, f"unknown {value!r}; choose one of {', '.join(allowed)}")
        if not isinstance(self.explore_uniform, bool):
            raise ConfigurationError("explore_uniform", f"expected true or false, got {self.explore_uniform!r}")
        if self.init not in (None, "subregion", "whole"):
            raise ConfigurationError("init", f"choose 'subregion' or 'whole', got {self.init!r}")
        if self.empty_sample_fallback not in ("noise", "uniform"):
            raise ConfigurationError("empty_sample_fallback", "choose 'noise' or 'uniform'")
        if self.planted_bug not in PLANTED_BUGS:
            raise ConfigurationError("planted_bug", f"choose one of {', '.join(PLANTED_BUGS)}")
        Sampling.parse(self.sampling)
        Neighbouring.parse(self.neighbouring)

    def _check_numbers(self) -> None:
        """Whole numbers with their lower bounds, positive reals, and the bounded reals."""
        for name, low in INTEGER_FIELDS.items():
            object.__setattr__(self, name, int(require_number(name, getattr(self, name), low=low, integer=True)))
        for name in POSITIVE_FIELDS:
            object.__setattr__(self, name, require_number(name, getattr(self, name), low=0, low_open=True))
        require_number("rate", self.rate, low=0, low_open=True, high=1)
        require_number("heterogeneity", self.heterogeneity, low=0, high=1)
        require_number("weight_gap", self.weight_gap, low=0)
        if self.delta is not None:
            require_number("delta", self.delta, low=0, low_open=True, high=1, high_open=True)
        if self.population is not None:
            require_number("population", self.population, low=self.num_agents, integer=True)

    def _check_objective(self) -> None:
        """The objective's own requirements: its dimension and its data file."""
        if self.objective != "synthetic" and self.dim != 2:
            raise ConfigurationError("dim", f"the {self.objective} objective tunes (C, gamma): dim must be 2")
        if self.objective == "landmine" and not self.landmine_path:
            raise ConfigurationError("landmine_path", "the landmine objective needs the path of LandmineData.mat")
        if self.objective != "landmine" and self.landmine_path:
            raise ConfigurationError(
                "landmine_path", f"only the landmine objective reads a data file (objective is {self.objective!r})"
            )

    # ----- derived ---------------------------------------------------------------------------
    @property
    def private(self) -> bool:
        return self.algorithm.startswith("dp-")

    @property
    def effective_subregions(self) -> int:
        """P used by the run: ``subregions`` for the DE variants, 1 otherwise."""
        return self.subregions if self.algorithm.endswith("-de") else 1

    @property
    def initial_design(self) -> str:
        """``subregion``: agent n draws its initial points in sub-region n mod ``subregions``; ``whole``."""
        if self.init is not None:
            return self.init
        return "subregion" if self.algorithm.endswith("-de") else "whole"

    @property
    def declared_population(self) -> int:
        return int(self.population) if self.population is not None else self.num_agents

    @property
    def dp_delta(self) -> float:
        return float(self.delta) if self.delta is not None else float(self.num_agents) ** -1.1

    @property
    def per_vector_clip(self) -> float:
        return float(self.clip) / float(self.effective_subregions) ** 0.5

    def mechanism(self) -> SubsampledGaussian | None:
        """The one subsampled Gaussian of the server (clip S/sqrt(P)); None for non-private algorithms."""
        if not self.private:
            return None
        return SubsampledGaussian(
            rate=self.rate,
            noise_multiplier=self.noise_multiplier,
            clip=self.per_vector_clip,
            sampling=self.sampling,
            neighbouring=self.neighbouring,
            population=self.declared_population,
        )

    def with_canary_slot(self) -> FTSConfig:
        """Same run with one extra declared slot for a canary agent (use it in both audit worlds)."""
        return self.replace(population=self.num_agents + 1)

    # ----- construction (replace, to_dict, from_dict, from_toml: StrictConfig) ---------------
    @classmethod
    def toml_keys(cls, path) -> dict:
        """The keys of a TOML file (top level, or all under one ``[fts]`` table), read strictly: an
        unknown or misplaced key or a wrong type is a ConfigurationError naming its path."""
        return dict(read_strict_toml(Path(path), TOML_SCHEMA, table="fts"))

    @classmethod
    def from_preset(cls, name: str, **overrides) -> FTSConfig:
        """Presets: landmine, svm-breast-cancer, svm-digits, synthetic (dpfed/presets/fts_<name>.toml)."""
        if name not in PRESETS:
            raise ConfigurationError("preset", f"unknown {name!r}; choose one of {', '.join(PRESETS)}")
        return cls.from_toml(PRESET_DIR / f"fts_{name}.toml", **overrides)


FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(FTSConfig))
TOML_SCHEMA = dataclass_schema(FTSConfig)
