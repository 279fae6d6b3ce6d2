"""Flower's ``LocalDpMod`` in a ClientApp, checked from the run: what each client released over its rounds.

``LocalDpMod(clipping_norm C, sensitivity S, epsilon, delta)`` clips each training reply's update to C and adds
Gaussian noise of std ``S sqrt(2 ln(1.25/delta)) / epsilon`` (the classic calibration), once per training call.
Facts the checks rest on (flwr 1.42's ``localdp_mod``):

- the noise is scaled by the user's ``sensitivity``, not by the clip: the L2 sensitivity of a clipped update is C
  when a client's data is added or removed (its update against none) and 2C when it is replaced; a sensitivity below
  C is critical (``local-sensitivity-below-clip``, the effective multiplier ``z S / C``), below 2C medium;
- the (epsilon, delta) it is given hold for one release (when the classic calibration meets them: critical where the
  exact Gaussian profile misses delta, ``attacks.flower_checks.check.local_findings``); a client that trains in R
  rounds releases R times: the composed epsilon is that of one Gaussian with ``mu = sqrt(R) C / sigma`` (exact),
  computed per client from the training calls the run shows.
"""

from __future__ import annotations

import math
from collections import Counter

from accounting.calibration import classic_gaussian_noise_multiplier
from accounting.exact import gaussian_epsilon
from attacks.flower_checks.check import local_findings
from attacks.flower_checks.findings import FlowerFinding
from dpfed.flower.config import FlowerDpConfig

TOLERANCE = 0.01


def local_dp_findings(mods, records: list[dict], delta: float, claimed_epsilon: float | None) -> dict:
    """``{"rows", "findings"}`` for the ``LocalDpMod`` objects of the ClientApp (``mods``) over the run's client
    records (``dpfed.flower.client_observer``); empty without one."""
    if not mods:
        return {"rows": {}, "findings": []}
    mod = mods[0]
    clip, sensitivity = float(mod.clipping_norm), float(mod.sensitivity)
    z = classic_gaussian_noise_multiplier(float(mod.epsilon), float(mod.delta))  # std / S
    sigma = z * sensitivity
    trained = Counter(int(r["node_id"]) for r in records if str(r["message_type"]).startswith("train"))
    config = FlowerDpConfig(kind="local", rounds=max(trained.values(), default=1), nodes=max(len(trained), 1),
                            sampled=max(len(trained), 1), clip=clip, local_epsilon=float(mod.epsilon),
                            local_delta=float(mod.delta))
    findings = list(local_findings(config))
    if sensitivity < clip * (1 - 1e-12):
        findings.append(FlowerFinding("local-sensitivity-below-clip", "critical",
                                      f"LocalDpMod scales its noise by sensitivity {sensitivity:g} but clips updates "
                                      f"to {clip:g}: one client's update moves the release by up to {clip:g}, so the "
                                      f"effective noise multiplier is {sigma / clip:.4g}, not {z:.4g}",
                                      {"sensitivity": sensitivity, "clip": clip, "effective": sigma / clip}))
    elif sensitivity < 2 * clip * (1 - 1e-12):
        findings.append(FlowerFinding("local-sensitivity-replace-one", "medium",
                                      f"LocalDpMod's sensitivity {sensitivity:g} covers adding or removing a client's "
                                      f"update (clip {clip:g}) but not replacing it (2C = {2 * clip:g})",
                                      {"sensitivity": sensitivity, "clip": clip}))
    rows = {}
    at = delta if claimed_epsilon is not None else float(mod.delta)  # the mod's own figure holds at its delta
    for node, rounds in sorted(trained.items()):
        mu = math.sqrt(rounds) * clip / sigma if sigma > 0 else math.inf
        rows[node] = {"rounds": rounds, "per_release_epsilon": float(mod.epsilon), "delta": at,
                      "composed_epsilon": float(gaussian_epsilon(mu, at)) if math.isfinite(mu) else math.inf}
        claim = claimed_epsilon if claimed_epsilon is not None else float(mod.epsilon)
        composed = rows[node]["composed_epsilon"]
        if claim * (1 + TOLERANCE) < composed:
            source = "the claimed epsilon" if claimed_epsilon is not None else "LocalDpMod's per-release epsilon"
            findings.append(FlowerFinding("understated-local-epsilon", "critical",
                                          f"client {node}: {source} {claim:.4g} is below the epsilon of its {rounds} "
                                          f"LocalDpMod releases composed, {composed:.4g} at delta {at:g} (exact "
                                          f"Gaussian, noise std {sigma:.4g} against its clip {clip:g})",
                                          {"node": node, "rounds": rounds, "claimed_epsilon": claim,
                                           "composed_epsilon": composed}))
    return {"rows": rows, "findings": findings}
