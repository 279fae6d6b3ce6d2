"""Checks, per surviving DP-FedZero mutant, that it only changes what is done after the release, or only the clip.

DP-FedZero's uplink releases ``SubsampledGaussian(q, z, C).release`` of the workers' scalars (or of the
aggregator's vector sum) every round; the guarantee rests on q, z and that each published value is an output of
that release. ``RELEASE_SCRIPT`` runs ``run_dp_fedzero`` of the tree (original or mutant; the mechanism module is
never mutated here) over worker and record level, scalar and vector noise, rates 1, 0.5 and 0.3, noise multipliers
0.7 to 2 and clips 0.5 to 3.7 (four rounds, seed 5; the option strings decoded at run time, so a comparison
written ``is`` behaves as for a value read from a file), recording every call of the release: the mechanism's
parameters, its input and output; and whether every published value (``scalar`` and ``noisy_sum`` messages) is one
of the values the releases output. Categories, each checked for the mutant in every configuration (no new errors,
no broken configuration in ``mutation_release.compare``):

- ``post-processing``: every release call has the original's parameters, the first call the original's input and
  output, and every published value is a release output: the change is in what is done with the released values
  (the model update), which later rounds' inputs then follow;
- ``recalibrated``: as above, but the calls' clips differ (positive and finite) while rate, noise multiplier and
  sampling are the original's: the same guarantee at another clip.
"""

from __future__ import annotations

import math
from pathlib import Path

from mutation_release import paired, run_script

RELEASE_SCRIPT = r'''
import json, sys
import numpy as np
from accounting import mechanisms
from dpfed.fedzero import FedZeroConfig, run_dp_fedzero

release = mechanisms.SubsampledGaussian.release
calls = []

def recording(self, x, rng=None, *args, **kwargs):
    out = release(self, x, rng, *args, **kwargs)
    values = out[0] if isinstance(out, tuple) else out
    calls.append({"params": [self.rate, self.noise_multiplier, self.clip, self.sampling.value],
                  "input": np.asarray(x, dtype=float).tolist(), "output": np.asarray(values, dtype=float).tolist()})
    return out

mechanisms.SubsampledGaussian.release = recording
out = {}
options = json.loads('[["worker", "scalar", 1.0, 0.7, 0.5], ["worker", "scalar", 0.5, 2.0, 2.0], '
                     '["worker", "vector", 1.0, 1.0, 3.7], ["worker", "vector", 0.5, 0.7, 0.5], '
                     '["record", "scalar", 0.3, 1.0, 2.0]]')
for unit, noise, rate, z, clip in options:
    key = f"unit={unit} noise={noise} rate={rate} z={z} clip={clip}"
    calls.clear()
    try:
        run = run_dp_fedzero(FedZeroConfig(rounds=4), 5, unit=unit, noise=noise, rate=rate, noise_multiplier=z,
                             clip=clip)
        published = [np.asarray(m.payload, dtype=float).ravel() for m in run.transcript.messages
                     if m.name in ("scalar", "noisy_sum")]
        outputs = set(np.concatenate([np.ravel(c["output"]) for c in calls]).tolist()) if calls else set()
        out[key] = {"params": [c["params"] for c in calls], "first": calls[0] if calls else None,
                    "published": int(sum(p.size for p in published)),
                    "published_are_outputs": all(v in outputs for p in published for v in p.tolist())}
    except Exception as exc:
        out[key] = {"error": type(exc).__name__}
json.dump(out, sys.stdout)
'''


def release_calls(tree: Path) -> dict:
    """{configuration: the release calls' parameters, the first call, whether what is published is released}."""
    return run_script(RELEASE_SCRIPT, tree)


def after_release(original: dict, mutant: dict, difference: dict) -> str | None:
    """``post-processing``, ``recalibrated`` (module docstring) or None."""
    pairs = paired(original, mutant)
    if difference["breaks"] or pairs is None:
        return None
    clips_differ = False
    for before, after in pairs:
        if not (after["published_are_outputs"] and after["published"]) or len(after["params"]) != len(before["params"]):
            return None
        here = False
        for (q0, z0, c0, s0), (q1, z1, c1, s1) in zip(before["params"], after["params"], strict=True):
            if (q1, z1, s1) != (q0, z0, s0) or not (math.isfinite(c1) and c1 > 0):
                return None
            here |= c1 != c0
        first, now = before["first"], after["first"]
        if now["input"] != first["input"] or (not here and now["output"] != first["output"]):
            return None
        clips_differ |= here
    return "recalibrated" if clips_differ else "post-processing"
