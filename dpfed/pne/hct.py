"""HCT (High Confidence Tree, Azar, Lazaric and Brunskill 2014), the centralised baseline of Fed-PNE.

Runs on the *global* objective with one evaluation per round, as if communication were free (the
seed's comparison protocol). Written from the paper's description (HCT-iid):

* ``t+ = 2^(floor(log2 t) + 1)``, ``delta~(t) = min(1, c1 delta / t)``, ``L(t) = log(1 / delta~(t+))``;
* ``U_{h,i} = mu_{h,i} + nu1 rho^h + sqrt(c^2 L / T_{h,i})`` (infinite before the first pull);
* ``B_{h,i} = min(U_{h,i}, max_j B_{child j})`` for internal nodes, ``B = U`` for leaves;
* each round: descend from the root, always to the child with the largest B (ties to the first child),
  while the current node is internal and has ``T_{h,i} >= tau_h = ceil(c^2 L / nu1^2 rho^(-2h))``;
  pull the reached node at its centre; update its statistics and the B-values along the path; expand
  a leaf once ``T_{h,i} >= tau_h``;
* all U and B values are refreshed whenever t+ doubles (t a power of two).

Defaults nu1 = 1, rho = 0.75 (the seed's tuned setting), c = 0.1, delta = 0.01 and HCT's
c1 = (rho / (3 nu1))^(1/8).
"""

from __future__ import annotations

import math

import numpy as np

from accounting.errors import require_number
from dpfed.pne.algorithm import resolve_objective, samples_needed
from dpfed.pne.objectives import Objective, ObservationNoise
from dpfed.pne.partition import Partition
from dpfed.pne.results import BanditRun
from dpfed.pne.seeding import RunStreams

INF = math.inf


class _Tree:
    """Flat storage of the HCT tree (Python lists: the algorithm is inherently sequential)."""

    def __init__(self, partition: Partition, objective: Objective):
        self.partition, self.objective = partition, objective
        self.depth, self.index, self.centre, self.regret = [], [], [], []
        self.lo, self.hi = [], []
        self.count, self.mean, self.upper, self.b = [], [], [], []
        self.children: list[list[int] | None] = []
        self.parent: list[int] = []
        root = partition.root()
        self._add(root, -1)

    def _add(self, nodes, parent: int) -> list[int]:
        start = len(self.depth)
        centres = nodes.centre
        regrets = self.objective.regret(centres)
        for j in range(len(nodes)):
            self.depth.append(int(nodes.depth[j]))
            self.index.append(int(nodes.index[j]))
            self.lo.append(nodes.lo[j])
            self.hi.append(nodes.hi[j])
            self.centre.append(centres[j])
            self.regret.append(float(regrets[j]))
            self.count.append(0)
            self.mean.append(0.0)
            self.upper.append(INF)
            self.b.append(INF)
            self.children.append(None)
            self.parent.append(parent)
        return list(range(start, len(self.depth)))

    def expand(self, node: int) -> None:
        from dpfed.pne.partition import Nodes

        one = Nodes(
            np.array([self.depth[node]]), np.array([self.index[node]]), self.lo[node][None, :], self.hi[node][None, :]
        )
        self.children[node] = self._add(self.partition.children(one), node)


def run_hct(
    objective: str | Objective = "garland",
    horizon: int = 1000,
    *,
    seed=None,
    nu1: float = 1.0,
    rho: float = 0.75,
    c: float = 0.1,
    c1: float | None = None,
    conf_delta: float = 0.01,
    k: int = 2,
    noise: ObservationNoise | None = None,
    partition: Partition | None = None,
) -> BanditRun:
    """Run HCT for ``horizon`` evaluations of the global objective; returns a one-client ``BanditRun``.

    ``seed`` gives the partition seed and the observation noise through the same streams as Fed-PNE,
    so the two algorithms run on the same partition for the same seed.
    """
    horizon, c1 = _validated(horizon, nu1, rho, c, c1, conf_delta)
    obj = resolve_objective(objective)
    streams = RunStreams.from_seed(seed)
    part = partition or Partition(obj.domain, k=k, seed=streams.partition_seed)
    noise = noise or ObservationNoise()
    search = _HCTSearch(_Tree(part, obj), nu1, rho, c, c1, conf_delta)
    instant, pulled = search.play(horizon, obj.f_star, noise.sample(streams.observation, horizon))
    tree = search.tree
    params = {
        "nu1": nu1,
        "rho": rho,
        "c": c,
        "c1": c1,
        "conf_delta": conf_delta,
        "k": k,
        "noise": {"kind": noise.kind, "width": noise.width},
        "partition": part.describe(),
        "tree_size": len(tree.count),
    }
    points = np.asarray(tree.centre)[pulled]
    recommendation = np.asarray(tree.centre[search.most_pulled()])
    return BanditRun("hct", obj.name, 1, horizon, instant, points, recommendation, parameters=params)


def _validated(horizon, nu1, rho, c, c1, conf_delta) -> tuple[int, float]:
    """The checked horizon and c1 (HCT's default ``(rho / (3 nu1))^(1/8)`` when None)."""
    horizon = int(require_number("horizon", horizon, low=1, integer=True))
    require_number("nu1", nu1, low=0, low_open=True)
    require_number("rho", rho, low=0, high=1, low_open=True, high_open=True)
    require_number("c", c, low=0, low_open=True)
    if c1 is None:
        c1 = (rho / (3.0 * nu1)) ** (1.0 / 8.0)
    require_number("c1", c1, low=0, low_open=True)
    require_number("conf_delta", conf_delta, low=0, high=1, low_open=True)
    return horizon, c1


class _HCTSearch:
    """HCT's statistics on a ``_Tree`` (root expanded) and its per-round rule (see the module docstring)."""

    def __init__(self, tree: _Tree, nu1: float, rho: float, c: float, c1: float, conf_delta: float):
        tree.expand(0)
        self.tree = tree
        self.nu1, self.rho, self.c2, self.c1, self.conf_delta = nu1, rho, c * c, c1, conf_delta

    def log_term(self, t: int) -> float:
        """``L(t) = log(1 / delta~(t+))`` (at least 0)."""
        t_plus = 2 ** (int(math.floor(math.log2(t))) + 1)
        return math.log(max(1.0, t_plus / (self.c1 * self.conf_delta)))

    def u_value(self, node: int, lt: float) -> float:
        """``U_{h,i}``: infinite before the first pull."""
        tree = self.tree
        n = tree.count[node]
        if n == 0:
            return INF
        return tree.mean[node] + self.nu1 * self.rho ** tree.depth[node] + math.sqrt(self.c2 * lt / n)

    def refresh_all(self, lt: float) -> None:
        """Recompute every U and B value (children are stored after their parents)."""
        upper, b, children = self.tree.upper, self.tree.b, self.tree.children
        for node in range(len(upper) - 1, -1, -1):
            upper[node] = self.u_value(node, lt)
            kids = children[node]
            b[node] = upper[node] if kids is None else min(upper[node], max(b[j] for j in kids))

    def play(self, horizon: int, f_star: float, obs_noise: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Run ``horizon`` rounds; returns the instant regrets and the pulled nodes."""
        tree, max_depth = self.tree, self.tree.partition.max_depth
        count, mean, upper, b = tree.count, tree.mean, tree.upper, tree.b
        children, depth, regret = tree.children, tree.depth, tree.regret
        nu1, rho, c2 = self.nu1, self.rho, self.c2
        instant = np.empty(horizon)
        pulled = np.empty(horizon, dtype=np.int64)
        lt = self.log_term(1)
        for t in range(1, horizon + 1):
            if t & (t - 1) == 0:  # t is a power of two: t+ doubled
                lt = self.log_term(t)
                self.refresh_all(lt)
            node, path = 0, [0]
            while children[node] is not None and (node == 0 or count[node] >= _tau(c2, lt, nu1, rho, depth[node])):
                node = max(children[node], key=b.__getitem__)  # first maximum on ties
                path.append(node)
            instant[t - 1] = regret[node]
            pulled[t - 1] = node
            count[node] += 1
            reward = -regret[node] + f_star + obs_noise[t - 1]
            mean[node] += (reward - mean[node]) / count[node]
            upper[node] = self.u_value(node, lt)
            for j in reversed(path):
                kids = children[j]
                b[j] = upper[j] if kids is None else min(upper[j], max(b[q] for q in kids))
            if (
                children[node] is None
                and count[node] >= _tau(c2, lt, nu1, rho, depth[node])
                and depth[node] < max_depth
            ):
                tree.expand(node)
                b[node] = upper[node]
        return instant, pulled

    def most_pulled(self) -> int:
        """The recommendation: the most pulled node, the shallowest on ties."""
        count, depth = self.tree.count, self.tree.depth
        return max(range(len(count)), key=lambda j: (count[j], -depth[j]))


def _tau(c2: float, lt: float, nu1: float, rho: float, h: int) -> int:
    return samples_needed(c2, lt, nu1, rho, h)
