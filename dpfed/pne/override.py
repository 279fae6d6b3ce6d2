"""Canary hook of Fed-PNE: force chosen raw rewards before any clipping or noise.

Its own module so that the protocol (``algorithm``) and the batched engine (``engine``) both use it
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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


def apply_override(
    rewards: np.ndarray, nodes: list[tuple[int, int]], override: RewardOverride | None, pulled: np.ndarray
) -> int:
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
