"""FedZero, federated zero-order online convex optimisation (notes B.1-B.3), and DP-FedZero, our private
variants (notes B.5).

Python API::

    from dpfed.fedzero import FedZeroConfig, run_fedzero, run_dp_fedzero
    run = run_fedzero(FedZeroConfig(geometry="l1", workers=4, rounds=10_000), seed=0)
    run.regret, run.transcript, run.uplink_reals
    dp = run_dp_fedzero(FedZeroConfig(), seed=0, unit="worker", rate=0.5, noise_multiplier=1.0)
    dp.composition()        # n rounds of the subsampled Gaussian
"""

from dpfed.fedzero.algorithm import ExactUplink, FedZeroRun, ScalarCanary, run_fedzero
from dpfed.fedzero.config import FedZeroConfig, explicit_bound, theorem_bound
from dpfed.fedzero.objectives import ContextLosses
from dpfed.fedzero.private import dp_fedzero_release, dp_uplink, release_epsilon, run_dp_fedzero

__all__ = [
    "ContextLosses",
    "ExactUplink",
    "FedZeroConfig",
    "FedZeroRun",
    "ScalarCanary",
    "dp_fedzero_release",
    "dp_uplink",
    "explicit_bound",
    "release_epsilon",
    "run_dp_fedzero",
    "run_fedzero",
    "theorem_bound",
]
