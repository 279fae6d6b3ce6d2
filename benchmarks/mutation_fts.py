"""Checks, per surviving DP-FTS-DE mutant, that it only changes what an agent computes from its own data.

DP-FTS-DE's guarantee is per agent: the server clips each agent's upload and adds noise calibrated to the clip,
whatever the upload holds, so an agent may upload any function of its own data (and of the public broadcasts)
without a change to the privacy of anyone. A mutant of the agents' code is of that kind (``input-only``) when,
checked for that mutant:

- the server's release code is the original's (``dpfed/fts/server.py`` and ``accounting/mechanisms.py`` the same
  bytes in the mutant's tree);
- ``ISOLATION_SCRIPT``, run in the mutant's tree over ``mutation_release.CONFIGURATIONS["fts"]`` (3 and 29 agents,
  1 and 4 sub-regions, rates 0.1 to 1) and seeds 5 and 11, finds every first-round upload finite (a NaN or an
  infinity would survive the clip and show who was sampled) and, when agent 1's observations are all shifted
  by 0.75, every other agent's first-round upload unchanged bit for bit (no agent's upload reads another's data);
- no configuration breaks where the original's does not, and the privacy description is the original's.

A mutant of the server is ``post-processing`` (``rescaled_broadcast``) when every first-round upload is the original's
bit for bit and the first-round broadcasts are one public affine map of the original's per configuration (both seeds,
both data sets): a changed rescaling after the noise.
"""

from __future__ import annotations

import json
from pathlib import Path

from mutation_mutants import file_digest
from mutation_release import CONFIGURATIONS, paired, run_script

SERVER_FILES = ("dpfed/fts/server.py", "accounting/mechanisms.py")

ISOLATION_SCRIPT = r'''
import json, sys
import numpy as np
from dpfed.fts import FTSConfig, run_fts_batch
from dpfed.fts import objectives

evaluate = objectives.TrialObjectives.evaluate
shifted_agent = [None]

def shifted(self, x, streams):
    y, t = evaluate(self, x, streams)
    if shifted_agent[0] is not None:
        y = np.array(y, dtype=float, copy=True)
        y[:, shifted_agent[0]] += 0.75
    return y, t

objectives.TrialObjectives.evaluate = shifted
out = {}
for q, z, c, n, p in json.load(sys.stdin):
    config = FTSConfig.from_preset("synthetic", dim=1, num_agents=int(n), rounds=2, init_points=3, num_features=20,
                                   subregions=int(p), rate=float(q), noise_multiplier=float(z), clip=float(c))
    for seed in (5, 11):
        uploads, broadcasts = [], []
        for agent in (None, 1):
            shifted_agent[0] = agent
            try:
                run = run_fts_batch(config, [seed])
                uploads.append(np.asarray(run.uploads, dtype=float)[0, 0, : int(n)])
                broadcasts.append(np.asarray(run.broadcasts, dtype=float)[0, 0].tolist())
            except Exception as exc:
                uploads.append(f"error: {type(exc).__name__}")
        key = f"q={q} z={z} clip={c} agents={n} P={p} seed={seed}"
        if any(isinstance(u, str) for u in uploads):
            out[key] = {"error": " / ".join(u for u in uploads if isinstance(u, str))}
            continue
        same, moved = uploads
        others = [i for i in range(int(n)) if i != 1]
        out[key] = {"finite": bool(np.isfinite(same).all() and np.isfinite(moved).all()),
                    "others_unchanged": bool(np.array_equal(same[others], moved[others])),
                    "shifted_changed": not np.array_equal(same[1], moved[1]),
                    "uploads": same.tolist(), "broadcasts": broadcasts}
json.dump(out, sys.stdout)
'''


def isolation(tree: Path) -> dict:
    """{configuration: {"finite", "others_unchanged"} or {"error"}} of ``tree``'s agents."""
    return run_script(ISOLATION_SCRIPT, tree, json.dumps(CONFIGURATIONS["fts"]), timeout=1200)


def server_digests(tree: Path) -> dict:
    return {name: file_digest(tree, name) for name in SERVER_FILES}


def input_only(server: dict, tree: Path, original: dict, mutant: dict, difference: dict) -> bool:
    """The checks of the module docstring for the mutant in ``tree``: ``server`` the original's
    ``server_digests``, ``original`` and ``mutant`` the two trees' ``isolation``, ``difference`` their
    ``mutation_release.compare``."""
    pairs = paired(original, mutant)
    if difference["breaks"] or difference["description_differs"] or pairs is None or server_digests(tree) != server:
        return False
    return all(after["finite"] and after["others_unchanged"] for _, after in pairs)


def rescaled_broadcast(original: dict, mutant: dict, difference: dict) -> bool:
    """``post-processing``: the agents' code is the original's (every first-round upload bit-identical) and, per
    configuration, the first-round broadcasts of both seeds and both data sets are one public affine map of the
    original's (the server's release is the original's, rescaled after the noise)."""
    from mutation_law import affine_fit

    if difference["breaks"] or difference["description_differs"] or paired(original, mutant) is None:
        return False
    groups: dict[str, tuple[list, list]] = {}
    for key, before in original.items():
        after = mutant[key]
        if "error" in before:
            continue
        if after["uploads"] != before["uploads"]:
            return False
        xs, ys = groups.setdefault(key.rsplit(" seed=", 1)[0], ([], []))
        xs += before["broadcasts"]
        ys += after["broadcasts"]
    return all(affine_fit(xs, ys) for xs, ys in groups.values())
