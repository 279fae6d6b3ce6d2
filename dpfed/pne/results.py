"""Run records of the X-armed bandit algorithms (Fed-PNE, DP-Fed-PNE, HCT)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from accounting.mechanisms import Composition, Gaussian
from dpfed.transcript import Transcript


@dataclass(frozen=True)
class PhaseLog:
    """One Fed-PNE phase: depth, active nodes, threshold ``tau``, pulls per client and node ``pulls``,
    the first per-client round of the phase, whether it completed, and (if it did) the confidence
    radius, best node and eliminated nodes."""

    phase: int
    depth: int
    nodes: list[tuple[int, int]]
    tau: int
    pulls: int
    start: int
    completed: bool
    radius: float | None = None
    best: tuple[int, int] | None = None
    eliminated: list[tuple[int, int]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"phase": self.phase, "depth": self.depth, "num_nodes": len(self.nodes), "tau": self.tau,
                "pulls": self.pulls, "start": self.start, "completed": self.completed,
                "radius": self.radius, "best": list(self.best) if self.best else None,
                "num_eliminated": len(self.eliminated)}


@dataclass
class BanditRun:
    """The outcome of one run.

    ``instant_regret[t]`` is ``f* - f(x_t)`` on the *global* objective at per-client round t (all
    clients pull the same point in Fed-PNE, so it is every client's regret; HCT has one "client").
    ``regret`` is the average per-client cumulative regret over time, ``per_client_regret`` the
    (M, T) cumulative regret of each client, ``total_regret`` the cumulative regret summed over clients.
    """

    algorithm: str
    objective: str
    num_clients: int
    horizon: int
    instant_regret: np.ndarray
    points: np.ndarray
    recommendation: np.ndarray
    communication_rounds: int = 0
    uplink_floats: int = 0
    downlink_values: int = 0
    phases: list[PhaseLog] = field(default_factory=list)
    transcript: Transcript = field(default_factory=Transcript)
    mechanism: Gaussian | None = None
    parameters: dict = field(default_factory=dict)

    @property
    def regret(self) -> np.ndarray:
        return np.cumsum(self.instant_regret)

    @property
    def per_client_regret(self) -> np.ndarray:
        return np.broadcast_to(self.regret, (self.num_clients, self.horizon))

    @property
    def total_regret(self) -> np.ndarray:
        return self.num_clients * self.regret

    @property
    def final_regret(self) -> float:
        return float(self.regret[-1])

    def composition(self) -> Composition:
        """What this run released, through what (see ``dpfed.pne.private`` for the event-level argument).

        Non-private runs release unnoised statistics and have no composition: ValueError.
        """
        if self.mechanism is None:
            raise ValueError(f"{self.algorithm} is not a private algorithm: nothing to account")
        return Composition.of(self.mechanism, 1)

    def upload(self, client: int, depth: int, index: int) -> float | None:
        """The local mean client ``client`` uploaded for node (depth, index), or None if it never did
        (the scalar a server-view canary probe scores)."""
        for message in self.transcript.filter(name="local_means", sender=f"agent{int(client)}"):
            nodes = [tuple(key) for key in message.payload["nodes"]]
            if (int(depth), int(index)) in nodes:
                return float(message.payload["means"][nodes.index((int(depth), int(index)))])
        return None

    def canary_slots(self, max_pulls: int = 1) -> list[tuple[int, int, int, int]]:
        """(phase, depth, index, pulls) of every node of a completed phase pulled at most ``max_pulls``
        times per client: where one forced reward moves an upload the most (mu = 1/(sigma sqrt(t)))."""
        return [(p.phase, d, i, p.pulls) for p in self.phases if p.completed and p.pulls <= max_pulls
                for d, i in p.nodes]

    def summary(self) -> dict:
        return {"algorithm": self.algorithm, "objective": self.objective, "clients": self.num_clients,
                "horizon": self.horizon, "final_regret": self.final_regret,
                "communication_rounds": self.communication_rounds, "uplink_floats": self.uplink_floats,
                "downlink_values": self.downlink_values, "recommendation": self.recommendation.tolist(),
                "phases": [p.to_dict() for p in self.phases], "parameters": self.parameters}
