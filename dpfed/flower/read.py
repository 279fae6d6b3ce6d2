"""Read a Flower strategy (or a ``LocalDpMod``) into a ``FlowerDpConfig``, duck-typed on flwr's attributes.

Works for the Message-API strategies (``flwr.serverapp.strategy``: ``fraction_train``,
``min_train_nodes``) and the legacy ones (``flwr.server.strategy``: ``fraction_fit``,
``min_fit_clients``). Flower's sample size is ``max(int(N * fraction), min_nodes)`` of the ``N``
connected nodes. No flwr import is needed: the objects carry everything.
"""

from __future__ import annotations

from accounting.errors import ConfigurationError
from dpfed.flower.config import FlowerDpConfig

WRAPPER_KINDS = {
    "DifferentialPrivacyServerSideFixedClipping": "server-fixed",
    "DifferentialPrivacyClientSideFixedClipping": "client-fixed",
    "DifferentialPrivacyServerSideAdaptiveClipping": "server-adaptive",
    "DifferentialPrivacyClientSideAdaptiveClipping": "client-adaptive",
}


def wrapper_kind(strategy) -> str | None:
    """The kind of Flower DP wrapper ``strategy`` is (its class or a base class), or None."""
    for cls in type(strategy).__mro__:
        if cls.__name__ in WRAPPER_KINDS:
            return WRAPPER_KINDS[cls.__name__]
    return None


def wrapper_of(strategy):
    """The Flower DP wrapper in ``strategy`` (itself or wrapped by a strategy wrapper such as ours)."""
    seen = 0
    while strategy is not None and seen < 8:
        if wrapper_kind(strategy) is not None:
            return strategy
        strategy, seen = getattr(strategy, "strategy", None), seen + 1
    raise ConfigurationError("strategy", "no Flower central-DP wrapper (DifferentialPrivacy...Clipping) found")


def flower_sample_size(inner, nodes: int) -> int:
    """Clients Flower samples per training round from ``nodes`` connected nodes."""
    if hasattr(inner, "fraction_train"):
        fraction, minimum = inner.fraction_train, inner.min_train_nodes
    elif hasattr(inner, "fraction_fit"):
        fraction, minimum = inner.fraction_fit, inner.min_fit_clients
    else:
        raise ConfigurationError("strategy", f"{type(inner).__name__} has no fraction_train/fraction_fit")
    return min(nodes, max(int(nodes * float(fraction)), int(minimum)))


def effective_noise_multiplier(wrapper) -> float:
    """The z the run is accounted at. Fixed clipping: the wrapper's ``noise_multiplier``. Adaptive clipping
    (Andrew et al. 2021): Flower stores the update's larger multiplier z_u and the clipped-count std
    sigma_b; together they are one Gaussian of multiplier (z_u^-2 + (2 sigma_b)^-2)^-1/2, the user's z."""
    z = float(wrapper.noise_multiplier)
    if not wrapper_kind(wrapper).endswith("adaptive"):
        return z
    sigma_b = float(wrapper.clipped_count_stddev)
    return (z ** -2 + (2.0 * sigma_b) ** -2) ** -0.5 if sigma_b > 0 else z


def config_from_strategy(strategy, nodes: int, rounds: int, weighting: str | None = None) -> tuple:
    """``(FlowerDpConfig, configured_m)``: what Flower runs with ``nodes`` connected, and the
    ``num_sampled_clients`` the wrapper's noise is calibrated for."""
    wrapper = wrapper_of(strategy)
    inner = wrapper.strategy
    if weighting is None:
        weighting = "examples" if getattr(inner, "weighted_by_key", "num-examples") else "equal"
    config = FlowerDpConfig(kind=wrapper_kind(wrapper), rounds=int(rounds), nodes=int(nodes),
                            sampled=flower_sample_size(inner, int(nodes)),
                            noise_multiplier=effective_noise_multiplier(wrapper),
                            clip=float(wrapper.clipping_norm), weighting=weighting,
                            update_noise_multiplier=float(wrapper.noise_multiplier)
                            if wrapper_kind(wrapper).endswith("adaptive") else None)
    return config, int(wrapper.num_sampled_clients)


def config_from_local_dp_mod(mod, nodes: int, sampled: int, rounds: int) -> FlowerDpConfig:
    """``FlowerDpConfig`` of a ``LocalDpMod`` (its per-release epsilon and delta)."""
    if type(mod).__name__ != "LocalDpMod":
        raise ConfigurationError("mod", f"expected a LocalDpMod, got {type(mod).__name__}")
    return FlowerDpConfig(kind="local", rounds=int(rounds), nodes=int(nodes), sampled=int(sampled),
                          clip=float(mod.clipping_norm), local_epsilon=float(mod.epsilon),
                          local_delta=float(mod.delta))
