"""Build the objective a configuration names."""

from __future__ import annotations

from accounting.errors import ConfigurationError
from accounting.mechanisms import as_generator


def make_objective(config, rng):
    """Objective for ``config`` (an ``FTSConfig``); ``rng`` draws synthetic functions (data are fixed)."""
    from dpfed.objectives.landmine import load_landmine
    from dpfed.objectives.svm import SVMTuning, sklearn_shards
    from dpfed.objectives.synthetic import SyntheticGP

    if config.objective == "synthetic":
        return SyntheticGP(
            config.num_agents,
            config.dim,
            as_generator(rng),
            lengthscale=config.gp_lengthscale,
            heterogeneity=config.heterogeneity,
            noise_var=config.objective_noise_var,
        )
    if config.objective.startswith("svm-"):
        return SVMTuning(
            sklearn_shards(config.objective[4:], config.num_agents, config.data_seed),
            split_seed=config.data_seed,
        )
    if config.objective == "landmine":
        fields = load_landmine(config.landmine_path)
        if len(fields) < config.num_agents:
            raise ConfigurationError(
                "num_agents",
                f"the landmine file has {len(fields)} fields, fewer than {config.num_agents} agents",
            )
        return SVMTuning(fields[: config.num_agents], split_seed=config.data_seed)
    raise ConfigurationError("objective", f"unknown objective {config.objective!r}")
