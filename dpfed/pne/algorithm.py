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

import math
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number
from dpfed.pne.objectives import LocalObjectives, Objective, ObservationNoise, get_objective
from dpfed.pne.partition import Partition
from dpfed.pne.results import BanditRun, PhaseLog
from dpfed.pne.seeding import RunStreams
from dpfed.transcript import BROADCAST, SERVER, Transcript, agent_name


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
        object.__setattr__(self, "num_clients", int(require_number("clients", self.num_clients, low=1,
                                                                   integer=True)))
        require_number("k", self.k, low=2, integer=True)
        require_number("nu1", self.nu1, low=0, low_open=True)
        require_number("rho", self.rho, low=0, high=1, low_open=True, high_open=True)
        require_number("c", self.c, low=0, low_open=True)
        require_number("c1", self.c1, low=0, low_open=True)
        if self.conf_delta is None:
            object.__setattr__(self, "conf_delta", 1.0 / self.num_clients)
        require_number("conf_delta", self.conf_delta, low=0, high=1, low_open=True)
        if self.expansion not in ("pseudocode", "prose"):
            raise ConfigurationError("expansion",
                                     f"unknown rule {self.expansion!r}; choose pseudocode or prose")
        if self.log_term <= 0:
            raise ConfigurationError("c1", "log(c1 T / conf_delta) must be positive")

    @property
    def log_term(self) -> float:
        return math.log(self.c1 * self.horizon / self.conf_delta)

    def tau(self, depth: int) -> int:
        """Samples a node at ``depth`` needs: ceil(c^2 log(c1 T/conf_delta) / nu1^2 * rho^(-2h))."""
        return max(1, math.ceil(self.c**2 * self.log_term / self.nu1**2 * self.rho ** (-2 * depth) - 1e-12))

    def radius(self, total_pulls: int) -> float:
        """Confidence radius b = c sqrt(log(c1 T/conf_delta) / T_{h,i})."""
        return self.c * math.sqrt(self.log_term / total_pulls)

    def needs_expansion(self, num_nodes: int, depth: int) -> bool:
        tau, m = self.tau(depth), self.num_clients
        if self.expansion == "prose":
            return num_nodes * tau < m
        return num_nodes * tau <= m or tau <= 1


@dataclass(frozen=True)
class RewardOverride:
    """Force client ``client``'s raw reward(s) in node (``depth``, ``index``) to ``value``.

    ``pull`` selects which of the client's pulls of that node (0-based; None = all of them);
    ``run.parameters["override_applied"]`` counts the rewards actually replaced (0 if the node was
    never active in an uploaded phase, or the pull index exceeded the node's pulls). The
    override happens before any clipping or noise, exactly where an environment's reward would enter,
    so a probe can compare worlds ``value=0`` and ``value=1`` (or an out-of-range canary such as 10).
    A membership experiment must give every trial and world its own seed (fresh noise); reusing one
    seed in both worlds cancels the noise (useful only for deterministic tests of the clipping).
    """

    client: int
    depth: int
    index: int
    value: float
    pull: int | None = 0


def _apply_override(rewards: np.ndarray, nodes: list[tuple[int, int]], override: RewardOverride | None,
                    pulled: np.ndarray) -> int:
    """Force the override's rewards in place; returns how many raw rewards were replaced."""
    if override is None:
        return 0
    try:
        j = nodes.index((int(override.depth), int(override.index)))
    except ValueError:
        return 0
    pulls = np.arange(rewards.shape[2]) if override.pull is None else np.array([int(override.pull)])
    pulls = pulls[(pulls < rewards.shape[2]) & pulled[j, np.minimum(pulls, rewards.shape[2] - 1)]]
    rewards[override.client, j, pulls] = override.value
    return int(pulls.size)


def resolve_objective(objective: str | Objective) -> Objective:
    return objective if isinstance(objective, Objective) else get_objective(objective)


def run_fed_pne(objective: str | Objective = "garland", clients: int = 10, horizon: int = 1000, *,
                seed=None, config: PNEConfig | None = None, heterogeneity: float = 0.1,
                heterogeneity_kind: str = "bumps", noise: ObservationNoise | None = None,
                partition: Partition | None = None, privatizer=None,
                reward_override: RewardOverride | None = None,
                algorithm: str = "fed-pne", **constants) -> BanditRun:
    """Run Fed-PNE on ``objective`` with ``clients`` clients for ``horizon`` pulls per client.

    ``seed`` (int or Generator) determines everything: partition, local perturbations, observation
    noise and (through ``privatizer``) the privacy noise, each from its own stream. ``constants``
    (k, nu1, rho, c, c1, conf_delta, expansion, final_upload) build the ``PNEConfig`` unless
    ``config`` is given. Returns a ``BanditRun``.
    """
    cfg = config or PNEConfig(horizon=horizon, num_clients=clients, **constants)
    obj = resolve_objective(objective)
    streams = RunStreams.from_seed(seed)
    part = partition or Partition(obj.domain, k=cfg.k, seed=streams.partition_seed)
    local = LocalObjectives(obj, cfg.num_clients, heterogeneity, heterogeneity_kind, rng=streams.objective)
    noise = noise or ObservationNoise()
    m_clients, horizon = cfg.num_clients, cfg.horizon
    if reward_override is not None:
        require_number("override client", reward_override.client, low=0, high=m_clients - 1, integer=True)
        require_number("override value", reward_override.value)
    forced = 0

    instant = np.empty(horizon)
    points = np.empty((horizon, obj.domain.shape[0]))
    transcript = Transcript()
    phases: list[PhaseLog] = []
    active = part.root()
    used, phase, rounds, uplink, downlink = 0, 0, 0, 0, 0
    recommendation = obj.domain.mean(axis=1)
    while used < horizon:
        phase += 1
        depth = int(active.depth[0])
        while cfg.needs_expansion(len(active), depth):
            active = part.children(active)
            depth += 1
        tau = cfg.tau(depth)
        pulls = math.ceil(tau / m_clients)
        num_nodes, length = len(active), len(active) * pulls
        keys = active.keys()
        transcript.add(phase, SERVER, BROADCAST, "schedule", {"nodes": keys, "pulls": pulls})
        downlink += 2 * num_nodes + 1
        done = min(length, horizon - used)
        centres = active.centre
        instant[used:used + done] = np.repeat(obj.regret(centres), pulls)[:done]
        points[used:used + done] = np.repeat(centres, pulls, axis=0)[:done]
        completed = done == length
        log = dict(phase=phase, depth=depth, nodes=keys, tau=tau, pulls=pulls, start=used,
                   completed=completed)
        if completed or cfg.final_upload:
            pulled = (np.arange(length) < done).reshape(num_nodes, pulls)
            rewards = local.values(centres)[:, :, None] + noise.sample(streams.observation,
                                                                       (m_clients, num_nodes, pulls))
            forced += _apply_override(rewards, keys, reward_override, pulled)
            if privatizer is not None:
                rewards = privatizer(rewards, streams.privacy)
            counts = pulled.sum(axis=1)
            sent = counts > 0
            means = (rewards * pulled).sum(axis=2)[:, sent] / counts[sent]
            sent_keys = [key for key, s in zip(keys, sent, strict=True) if s]
            for m in range(m_clients):
                transcript.add(phase, agent_name(m), SERVER, "local_means",
                               {"nodes": sent_keys, "means": means[m]})
            rounds += 1
            uplink += m_clients * len(sent_keys)
        if not completed:
            phases.append(PhaseLog(**log))
            break
        used += length
        mu = means.mean(axis=0)
        radius = cfg.radius(m_clients * pulls)
        best = int(np.argmax(mu))
        eliminated = mu + radius + cfg.nu1 * cfg.rho**depth < mu[best] - radius
        recommendation = centres[best]
        phases.append(PhaseLog(**log, radius=radius, best=keys[best],
                               eliminated=[key for key, e in zip(keys, eliminated, strict=True) if e]))
        active = part.children(active.take(~eliminated))
    params = {"k": cfg.k, "nu1": cfg.nu1, "rho": cfg.rho, "c": cfg.c, "c1": cfg.c1,
              "conf_delta": cfg.conf_delta, "expansion": cfg.expansion, "final_upload": cfg.final_upload,
              "heterogeneity": heterogeneity, "heterogeneity_kind": heterogeneity_kind,
              "noise": {"kind": noise.kind, "width": noise.width}, "partition": part.describe(),
              "override_applied": forced}
    return BanditRun(algorithm, obj.name, m_clients, horizon, instant, points, np.asarray(recommendation),
                     communication_rounds=rounds, uplink_floats=uplink, downlink_values=downlink,
                     phases=phases, transcript=transcript, parameters=params)
