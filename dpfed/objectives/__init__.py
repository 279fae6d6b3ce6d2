"""Black-box objectives for federated Bayesian optimisation (the FTS family).

Every objective has ``dim``, ``num_agents``, ``utility_name``, ``evaluate(x, rng) -> (observed, true)``
for one batch of points per agent (``x`` of shape (N, k, d) in [0, 1]^d; results (N, k)), and
``utility(best_true) -> (N,)`` turning each agent's best true value so far into a lower-is-better utility.
"""

from dpfed.objectives.factory import make_objective
from dpfed.objectives.landmine import load_landmine
from dpfed.objectives.svm import SVMTuning, sklearn_shards
from dpfed.objectives.synthetic import SyntheticGP

__all__ = ["make_objective", "load_landmine", "SVMTuning", "sklearn_shards", "SyntheticGP"]
