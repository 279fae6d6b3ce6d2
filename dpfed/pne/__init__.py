"""Federated X-armed bandits: Fed-PNE, DP-Fed-PNE and the centralised HCT baseline.

Plain Python API (all functions take ``seed``: an int or a ``numpy.random.Generator``)::

    from dpfed.pne import run_fed_pne, run_dp_fed_pne, run_hct, RewardOverride
    run = run_dp_fed_pne("garland", clients=10, horizon=1000, epsilon=1.0, dp_delta=1e-5, seed=0)
    run.regret            # average per-client cumulative regret, shape (T,)
    run.transcript        # broadcasts ("schedule") and per-client uploads ("local_means")
    run.composition()     # Composition.of(Gaussian, 1): event-level guarantee of the whole run

Canary probes: ``reward_override=RewardOverride(client, depth, index, value, pull=0)`` forces one raw
reward of one client in node (depth, index) before clipping and noise; ``run.phases`` says in which
phase each node was pulled and how often (``pulls``).
"""

from dpfed.pne.algorithm import PNEConfig, RewardOverride, run_fed_pne
from dpfed.pne.hct import run_hct
from dpfed.pne.objectives import (
    OBJECTIVES,
    LocalObjectives,
    Objective,
    ObservationNoise,
    get_objective,
)
from dpfed.pne.partition import Nodes, Partition
from dpfed.pne.private import (
    RewardPrivatizer,
    dp_mechanism,
    event_level_composition,
    noise_aware_c,
    run_dp_fed_pne,
)
from dpfed.pne.results import BanditRun, PhaseLog

__all__ = [
    "OBJECTIVES", "BanditRun", "LocalObjectives", "Nodes", "Objective", "ObservationNoise", "PNEConfig",
    "Partition", "PhaseLog", "RewardOverride", "RewardPrivatizer", "dp_mechanism", "event_level_composition",
    "get_objective", "noise_aware_c", "run_dp_fed_pne", "run_fed_pne", "run_hct",
]
