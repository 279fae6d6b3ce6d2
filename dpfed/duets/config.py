"""Configuration of one DUETS / DP-DUETS run: a validated frozen dataclass (strict TOML, like FTS).

Defaults reproduce the seed's experiments (notes A.7): N = 10 agents, T = 50, T_1 = 2, p0 = 10, noise
std 0.2, lambda = 0.2 (the code's tau), 2000 candidates, beta = 1 (the code's value; the paper grid-
searched beta in {0.2, 0.5, 1, 2, 5}). ``beta = "theory"`` uses Lemma 2.5 with delta' in the form
``delta_prime_form``; ``p0`` may be a number or one of the seed's two closed forms.

DP-DUETS (``algorithm = "dp-duets"``) is OUR design (notes A.9), not the seed's; see ``private.py``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from accounting.errors import ConfigurationError, require_number
from accounting.mechanisms import Neighbouring
from dpfed.config_base import StrictConfig
from dpfed.duets.objectives import OBJECTIVES
from dpfed.duets.schedule import DELTA_PRIME_FORMS, P0_FORMS

ALGORITHMS = ("duets", "dp-duets")
ELIMINATION_RULES = ("paper", "code", "off")
UNITS = ("agent", "reward")
AGENT_CLIPS = ("public", "sqrt")


def _choice(field: str, value, choices) -> None:
    if value not in choices:
        raise ConfigurationError(field, f"unknown {value!r}; choose one of {', '.join(map(str, choices))}")


@dataclass(frozen=True)
class DuetsConfig(StrictConfig):
    """All parameters of a run. Privacy fields are used by ``dp-duets`` only."""

    toml_table = "duets"

    algorithm: str = "duets"
    objective: str = "branin"
    num_agents: int = 10
    horizon: int = 50
    first_epoch: int = 2
    candidates: int = 2000
    dim: int = 10  # sphere objectives only
    lengthscale: float | None = None  # default: the seed's (0.2 Branin, 1 otherwise)
    objective_seed: int = 0
    noise_std: float = 0.2
    lam: float = 0.2
    p0: float | str = 10.0
    beta: float | str = 1.0
    delta: float = 0.1  # confidence level of the bandit guarantee (not the DP delta)
    delta_prime_form: str = "lemma4.2"
    rkhs_bound: float = 1.0  # B (theory beta only)
    noise_proxy: float | None = None  # R (theory beta only; default noise_std)
    elimination: str = "paper"
    jitter: float = 1e-8
    # --- DP-DUETS (ours) ---
    unit: str = "agent"
    rate: float = 1.0
    noise_multiplier: float = 1.0
    reward_clip: float = 4.0
    agent_clip: str = "public"
    clip_scale: float = 1.0
    neighbouring: str | None = None  # default: add-remove (agent), replace-one (reward)
    noise_correction: bool = True
    noise_delta: float = 0.05
    dp_delta: float = 1e-5  # the delta at which run reports state epsilon

    def __post_init__(self):
        _choice("algorithm", self.algorithm, ALGORITHMS)
        _choice("objective", self.objective, tuple(OBJECTIVES))
        _choice("elimination", self.elimination, ELIMINATION_RULES)
        _choice("delta_prime_form", self.delta_prime_form, DELTA_PRIME_FORMS)
        _choice("unit", self.unit, UNITS)
        _choice("agent_clip", self.agent_clip, AGENT_CLIPS)
        for name, low in {
            "num_agents": 1,
            "horizon": 1,
            "first_epoch": 1,
            "candidates": 2,
            "dim": 1,
            "objective_seed": 0,
        }.items():
            object.__setattr__(self, name, int(require_number(name, getattr(self, name), low=low, integer=True)))
        for name in ("noise_std", "lam", "jitter", "noise_multiplier", "reward_clip", "clip_scale"):
            object.__setattr__(
                self, name, require_number(name, getattr(self, name), low=0, low_open=name != "noise_std")
            )
        for name in ("lengthscale", "noise_proxy"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, require_number(name, getattr(self, name), low=0, low_open=True))
        object.__setattr__(self, "rkhs_bound", require_number("rkhs_bound", self.rkhs_bound, low=0))
        for name in ("delta", "noise_delta", "dp_delta"):
            value = require_number(name, getattr(self, name), low=0, high=1, low_open=True, high_open=True)
            object.__setattr__(self, name, value)
        object.__setattr__(self, "rate", require_number("rate", self.rate, low=0, low_open=True, high=1))
        if isinstance(self.p0, str):
            _choice("p0", self.p0, P0_FORMS)
        else:
            object.__setattr__(self, "p0", require_number("p0", self.p0, low=0, low_open=True))
        if isinstance(self.beta, str):
            _choice("beta", self.beta, ("theory",))
        else:
            object.__setattr__(self, "beta", require_number("beta", self.beta, low=0))
        if not isinstance(self.noise_correction, bool):
            raise ConfigurationError("noise_correction", f"expected true or false, got {self.noise_correction!r}")
        if self.neighbouring is not None:
            Neighbouring.parse(self.neighbouring)
        if self.unit == "reward" and self.rate != 1.0:
            raise ConfigurationError(
                "rate",
                "reward-level DP-DUETS releases every reward (rate must be 1); "
                "sampling single observations is not implemented",
            )
        if self.unit == "reward" and self.neighbouring_relation is not Neighbouring.REPLACE_ONE:
            raise ConfigurationError("neighbouring", "reward-level neighbours replace one reward: use replace-one")

    @property
    def private(self) -> bool:
        return self.algorithm == "dp-duets"

    @property
    def neighbouring_relation(self) -> Neighbouring:
        if self.neighbouring is None:
            return Neighbouring.REPLACE_ONE if self.unit == "reward" else Neighbouring.ADD_REMOVE
        return Neighbouring.parse(self.neighbouring)


FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(DuetsConfig))
