"""Checks, per surviving DP-DUETS mutant, that it only recalibrates the epoch mechanism (``recalibrated``).

DP-DUETS's agent-level release is ``SubsampledGaussian(q, z, C).release``: sample at q, clip each agent's
statistic to C, add noise z C, rescale. Its guarantee depends on q, z and the neighbouring relation, not on C: a
mutant that only changes the clip bound C (to any positive, finite value) releases a mechanism exactly as private.
At reward level the release adds noise z C to the exact sum (each reward's contribution is bounded by the
original's C by construction, nothing is clipped), so there a mutant is as private only if its C is at least the
original's. ``RECALIBRATION_SCRIPT`` runs ``epoch_mechanism`` and ``release_sum`` of the tree (original or mutant)
over both units, both agent clips ("public", "sqrt"), rates 1 and 0.5, reward clips 0.5, 2 and 3.7 and epoch
lengths 1, 4 and 9, on agent statistics beyond any of those clips (the option strings decoded at run time, so a
comparison written ``is`` behaves as for a value read from a file), and records the mechanism's parameters and
whether the release equals the mechanism's own ``release`` (agent level) or ``add_noise`` of the sum (reward level)
on the same seed. ``recalibrated`` holds when the mutant's outputs differ from the original's somewhere (the change
is in this code) and, in every configuration, it breaks nowhere the original does not, its rate, noise multiplier,
sampling and neighbouring relation are the original's, its clip is positive and finite (at least the original's at
reward level), and its release goes through the same path as the original's. ``rescaled`` (``post-processing``)
holds when the mechanism's parameters are all the original's and each configuration's releases on two agent data
sets are one public affine map of the original's (a changed rescaling after the noise).
"""

from __future__ import annotations

import math
from pathlib import Path

from mutation_release import paired, run_script

RECALIBRATION_SCRIPT = r'''
import json, sys
import numpy as np
from dpfed.duets.config import DuetsConfig
from dpfed.duets.private import epoch_mechanism, release_sum

out = {}
options = json.loads('[["agent", "public", 1.0], ["agent", "sqrt", 1.0], ["agent", "sqrt", 0.5], '
                     '["agent", "public", 0.5], ["reward", "public", 1.0]]')
for unit, agent_clip, rate in options:
    for c, z in ((0.5, 0.7), (2.0, 2.0), (3.7, 1.0)):
        for length in (1, 4, 9):
            key = f"unit={unit} agent_clip={agent_clip} rate={rate} reward_clip={c} z={z} epoch={length}"
            try:
                config = DuetsConfig(algorithm="dp-duets", unit=unit, agent_clip=agent_clip, rate=rate,
                                     reward_clip=c, noise_multiplier=z, num_agents=3)
                m = epoch_mechanism(config, length)
                data = [np.random.default_rng(length + k).normal(0.0, 10.0 * c * length, size=(3, 2)) for k in (0, 50)]
                released = [np.asarray(release_sum(config, m, stats, 5), dtype=float) for stats in data]
                clipped = np.asarray(m.release(data[0], 5, scale=1.0 / m.rate), dtype=float)
                summed = np.asarray(m.add_noise(data[0].sum(axis=-2), np.random.default_rng(5)), dtype=float)
                out[key] = {"rate": m.rate, "z": m.noise_multiplier, "clip": m.clip, "sampling": m.sampling.value,
                            "neighbouring": m.neighbouring.value, "released": [r.tolist() for r in released],
                            "path": "release" if np.array_equal(released[0], clipped) else
                                    "add_noise" if np.array_equal(released[0], summed) else "other"}
            except Exception as exc:
                out[key] = {"error": type(exc).__name__}
json.dump(out, sys.stdout)
'''


def recalibration(tree: Path) -> dict:
    """{configuration: the epoch mechanism's parameters, the release and its path, or {"error"}} of ``tree``."""
    return run_script(RECALIBRATION_SCRIPT, tree)


def recalibrated(original: dict, mutant: dict, difference: dict) -> bool:
    """The checks of the module docstring (``original``/``mutant``: ``recalibration`` of the two trees;
    ``difference``: their ``mutation_release.compare``)."""
    pairs = paired(original, mutant)
    if difference["breaks"] or pairs is None or mutant == original:
        return False
    for before, after in pairs:
        if any(after[k] != before[k] for k in ("rate", "z", "sampling", "neighbouring", "path")):
            return False
        if before["path"] == "other" or not (math.isfinite(after["clip"]) and after["clip"] > 0):
            return False
        if before["path"] == "add_noise" and after["clip"] < before["clip"]:
            return False
    return True


def rescaled(original: dict, mutant: dict, difference: dict) -> bool:
    """``post-processing``: the epoch mechanism's parameters are the original's and, per configuration, the mutant's
    releases on both agent data sets are ``a * original + b`` with one (a, b) (a public affine map of the original's
    release: a changed rescaling after the noise)."""
    from mutation_law import affine_fit

    pairs = paired(original, mutant)
    if difference["breaks"] or pairs is None or mutant == original:
        return False
    return all(all(after[k] == before[k] for k in ("rate", "z", "clip", "sampling", "neighbouring"))
               and affine_fit(before["released"], after["released"]) for before, after in pairs)
