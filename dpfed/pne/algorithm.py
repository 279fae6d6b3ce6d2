"""Fed-PNE (federated phased node elimination): server and clients, vectorised across clients.

Implements the corrected pseudocode of ``shared/notes/seed_fedpne.md`` section 2.4:

* ``tau(h) = ceil(c^2 log(c1 T / conf_delta) / nu1^2 * rho^(-2h))`` at the *actual* depth h of the
  active set (the seed's counter runs one level ahead);
* before each phase the server expands the active set while ``|K| tau(h) <= M or tau(h) <= 1``
  (``expansion="pseudocode"``, the default) or while ``|K| tau(h) < M`` (``expansion="prose"``);
* every client pulls every active node ``t = ceil(tau(h) / M)`` times at its centre, node by node, and
  uploads its local means; the server averages them, keeps the best node and eliminates nodes with
  ``mu + b + nu1 rho^h < mu_best - b``, ``b = c sqrt(log(c1 T / conf_delta) / (M t))``, and expands the
  survivors into all ``k`` children;
* budget: every client makes exactly T pulls. A phase cut by the horizon eliminates nothing; its
  partial means are uploaded only if ``final_upload=True`` (and are then privatised like any other);
* recommendation: centre of the best node of the last completed phase (domain centre if none).

Assumptions: the same representative point for all clients (so the server's mean is unbiased for
f(x_{h,i})), bounded observation noise, ties in the argmax broken by the lowest position.

Hooks: ``privatizer(rewards (M, L, t), rng) -> rewards`` is applied to the raw rewards of every phase
before averaging (DP-Fed-PNE); ``reward_override`` forces chosen raw rewards (canary probes).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from accounting.errors import ConfigurationError, require_number
from dpfed.pne.objectives import Objective, get_objective
from dpfed.pne.override import RewardOverride
from dpfed.pne.results import BanditRun

__all__ = ["PNEConfig", "RewardOverride", "resolve_objective", "run_fed_pne", "run_fed_pne_batch"]


TAU_CAP = 2**62  # samples per node beyond any horizon (and within 64-bit integers)


def samples_needed(c2: float, log_term: float, nu1: float, rho: float, depth: int, slack: float = 0.0) -> int:
    """``ceil(c2 log_term / nu1^2 rho^(-2 depth) - slack)``, at least 1 and at most ``TAU_CAP``; through logs
    where the product over- or underflows (nu1 = 1e-300, rho = 1e-300, ...)."""
    try:
        x = c2 * log_term / nu1**2 * rho ** (-2 * depth)
    except (OverflowError, ZeroDivisionError):
        if c2 == 0 or log_term <= 0:
            x = 0.0
        else:
            x = math.exp(min(700.0, math.log(c2) + math.log(log_term) - 2 * (math.log(nu1) + depth * math.log(rho))))
    return max(1, math.ceil(x - slack)) if x < TAU_CAP else TAU_CAP


@dataclass(frozen=True)
class PNEConfig:
    """Fed-PNE constants; defaults are the seed's experimental ones (k=2, nu1=1, rho=0.5, c=0.1, c1=1).

    ``conf_delta`` is the *confidence* level of tau and b (default 1/M, as in Theorem 3.1); it is not
    a privacy parameter.
    """

    horizon: int
    num_clients: int
    k: int = 2
    nu1: float = 1.0
    rho: float = 0.5
    c: float = 0.1
    c1: float = 1.0
    conf_delta: float | None = None
    expansion: str = "pseudocode"
    final_upload: bool = False

    def __post_init__(self):
        object.__setattr__(self, "horizon", int(require_number("horizon", self.horizon, low=1, integer=True)))
        object.__setattr__(self, "num_clients", int(require_number("clients", self.num_clients, low=1, integer=True)))
        require_number("k", self.k, low=2, integer=True)
        require_number("nu1", self.nu1, low=0, low_open=True)
        require_number("rho", self.rho, low=0, high=1, low_open=True, high_open=True)
        require_number("c", self.c, low=0, low_open=True)
        require_number("c1", self.c1, low=0, low_open=True)
        if self.conf_delta is None:
            object.__setattr__(self, "conf_delta", 1.0 / self.num_clients)
        require_number("conf_delta", self.conf_delta, low=0, high=1, low_open=True)
        if self.expansion not in ("pseudocode", "prose"):
            raise ConfigurationError("expansion", f"unknown rule {self.expansion!r}; choose pseudocode or prose")
        if self.log_term <= 0:
            raise ConfigurationError("c1", "log(c1 T / conf_delta) must be positive")

    @property
    def log_term(self) -> float:
        return math.log(self.c1 * self.horizon / self.conf_delta)

    def tau(self, depth: int) -> int:
        """Samples a node at ``depth`` needs: ceil(c^2 log(c1 T/conf_delta) / nu1^2 * rho^(-2h)), at most
        ``TAU_CAP`` (more than any run can pull: a node needing it is never completed either way)."""
        if depth not in self._taus:
            self._taus[depth] = samples_needed(self.c * self.c, self.log_term, self.nu1, self.rho, depth, slack=1e-12)
        return self._taus[depth]

    @functools.cached_property
    def _taus(self) -> dict:
        """``tau`` memoised by depth (the constants are frozen)."""
        return {}

    def first_phase_nodes(self) -> int:
        """Nodes the first phase plays: the root expanded while ``needs_expansion`` holds, before any pull
        (k^depth; later phases expand at most the surviving nodes). Counting stops above ``TAU_CAP``."""
        nodes, depth = 1, 0
        while nodes <= TAU_CAP and self.needs_expansion(nodes, depth):
            nodes, depth = nodes * self.k, depth + 1
        return nodes

    def radius(self, total_pulls: int) -> float:
        """Confidence radius b = c sqrt(log(c1 T/conf_delta) / T_{h,i})."""
        return self.c * math.sqrt(self.log_term / total_pulls)

    def needs_expansion(self, num_nodes: int, depth: int) -> bool:
        tau, m = self.tau(depth), self.num_clients
        if self.expansion == "prose":
            return num_nodes * tau < m
        return num_nodes * tau <= m or tau <= 1


def resolve_objective(objective: str | Objective) -> Objective:
    return objective if isinstance(objective, Objective) else get_objective(objective)


def run_fed_pne(
    objective: str | Objective = "garland",
    clients: int = 10,
    horizon: int = 1000,
    *,
    seed=None,
    config: PNEConfig | None = None,
    options=None,
    **settings,
) -> BanditRun:
    """Run Fed-PNE on ``objective`` with ``clients`` clients for ``horizon`` pulls per client.

    ``seed`` (int or Generator) determines everything: partition, local perturbations, observation
    noise and (through the privatizer) the privacy noise, each from its own stream. ``settings`` are
    ``PNEConfig`` constants (k, nu1, rho, c, c1, conf_delta, expansion, final_upload; ignored keys are
    errors) unless ``config`` is given, and ``FedPNEOptions`` fields (heterogeneity, noise, partition,
    privatizer, reward_override, ...) unless ``options`` is given. Returns a ``BanditRun``.
    """
    return run_fed_pne_batch(objective, clients, horizon, [seed], config=config, options=options, **settings)[0]


def run_fed_pne_batch(
    objective: str | Objective,
    clients: int,
    horizon: int,
    seeds,
    *,
    config: PNEConfig | None = None,
    options=None,
    **settings,
) -> list[BanditRun]:
    """``len(seeds)`` independent runs at once (``dpfed.pne.engine``); run k equals
    ``run_fed_pne(..., seed=seeds[k])`` (a Generator passed several times is consumed in order)."""
    from dpfed.pne.engine import FedPNEOptions
    from dpfed.pne.engine import run_fed_pne_batch as run_engine

    option_names = {f for f in FedPNEOptions.__dataclass_fields__}
    option_values = {k: settings.pop(k) for k in list(settings) if k in option_names}
    if options is None:
        option_values = {k: v for k, v in option_values.items() if v is not None}
        options = FedPNEOptions(**option_values)
    elif option_values:
        raise ConfigurationError(next(iter(option_values)), "give either options or option keywords")
    if config is not None and settings:
        raise ConfigurationError(next(iter(settings)), "give either config or Fed-PNE constants")
    cfg = config or PNEConfig(horizon=horizon, num_clients=clients, **settings)
    override = options.reward_override
    if override is not None:
        require_number("override client", override.client, low=0, high=cfg.num_clients - 1, integer=True)
        require_number("override value", override.value)
    return run_engine(resolve_objective(objective), cfg, list(seeds), options)
