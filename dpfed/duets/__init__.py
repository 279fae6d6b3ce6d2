"""DUETS (distributed kernel bandits with shared randomness, seed 001) and DP-DUETS (ours).

Python API::

    from dpfed.duets import DuetsConfig, run_duets, run_dis_kernel_ucb
    run = run_duets(DuetsConfig(objective="hartmann4"), seed=0)
    run.regret, run.communication, run.transcript
    run = run_duets(DuetsConfig(algorithm="dp-duets", noise_multiplier=2.0), seed=0)
    run.composition()   # one SubsampledGaussian release per completed epoch (agent level)

DP-DUETS is our design (notes A.9), not part of the seed; see ``dpfed.duets.private``.

The seed's inconsistencies (notes A.6) are kept selectable or documented where they live:
1. three forms of delta' (``delta_prime_form``; ``schedule``); 2. two forms of p0 (``p0``: a number, the
experiments' 10, or ``section3``/``theorem4.1``; ``schedule``); 3. two epoch-count bounds
(``schedule.epoch_count_bounds``); 4. the algorithm typos, repaired (``algorithm``); 5. the lambda
scaling of sigma~, one convention (``surrogate``); 6. paper vs code elimination (``elimination``).
"""

from dpfed.duets.algorithm import constants, objective_of, run_duets
from dpfed.duets.baseline import run_dis_kernel_ucb
from dpfed.duets.config import ALGORITHMS, DuetsConfig
from dpfed.duets.objectives import OBJECTIVES, DuetsObjective, make_objective
from dpfed.duets.private import epoch_mechanism, run_composition
from dpfed.duets.results import DuetsRun, EpochLog, RewardOverride

__all__ = [
    "ALGORITHMS",
    "OBJECTIVES",
    "DuetsConfig",
    "DuetsObjective",
    "DuetsRun",
    "EpochLog",
    "RewardOverride",
    "constants",
    "epoch_mechanism",
    "make_objective",
    "objective_of",
    "run_composition",
    "run_dis_kernel_ucb",
    "run_duets",
]
