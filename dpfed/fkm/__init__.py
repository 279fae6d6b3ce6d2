"""FKM bandit convex optimisation (notes C.1-C.3) and DP-FKM, our private variants (notes C.5).

Python API::

    from dpfed.fkm import FKMConfig, run_fkm, run_dp_fkm
    run = run_fkm(FKMConfig(dim=5, horizon=10_000), seed=0)
    run.regret, run.transcript, run.bound
    dp = run_dp_fkm(FKMConfig(), seed=0)      # event level: one Gaussian release for the whole run
    dp.composition()
"""

from dpfed.fkm.algorithm import FKMRun, SequenceFeedback, make_losses, run_fkm
from dpfed.fkm.config import FKMConfig, corrected_parameters, regret_bound
from dpfed.fkm.losses import SyntheticLosses
from dpfed.fkm.private import (
    DatasetFeedback,
    EventLevelFeedback,
    dataset_release_epsilon,
    dp_fkm_release,
    event_mechanism,
    event_release_epsilon,
    run_dp_fkm,
)

__all__ = [
    "DatasetFeedback",
    "EventLevelFeedback",
    "FKMConfig",
    "FKMRun",
    "SequenceFeedback",
    "SyntheticLosses",
    "corrected_parameters",
    "dataset_release_epsilon",
    "dp_fkm_release",
    "event_mechanism",
    "event_release_epsilon",
    "make_losses",
    "regret_bound",
    "run_dp_fkm",
    "run_fkm",
]
