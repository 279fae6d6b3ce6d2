"""Membership-inference probes and their registry.

``get_probe(name, **params)`` builds a probe by name; ``PROBES`` maps names to "module:Class" so that
probes whose algorithm code is heavy (end-to-end ones) are imported only when asked for.
"""

from __future__ import annotations

import dataclasses
import importlib

from accounting.errors import ConfigurationError
from attacks.probes.base import THREAT_MODELS, Probe, check_trials, check_world

# name -> ("module:Class", preset parameters)
PROBES: dict[str, tuple[str, dict]] = {
    "gaussian": ("attacks.probes.mechanisms:GaussianProbe", {}),
    "laplace": ("attacks.probes.mechanisms:LaplaceProbe", {}),
    "subsampled-gaussian": ("attacks.probes.mechanisms:SubsampledGaussianProbe", {}),
    "empty-sample": ("attacks.probes.mechanisms:EmptySampleProbe", {}),
    # planted bugs: the correct versions are the probes above with bug=None
    "bug-weak-noise": ("attacks.probes.mechanisms:GaussianProbe", {"bug": "weak-noise"}),
    "bug-no-clip": ("attacks.probes.mechanisms:SubsampledGaussianProbe", {"bug": "no-clip", "canary_norm": 10.0}),
    "bug-uniform-fallback": ("attacks.probes.mechanisms:EmptySampleProbe", {"bug": "uniform-fallback"}),
    "fts-server": ("attacks.probes.fts:FtsServerProbe", {}),
    "fts-server-reference": ("attacks.probes.fts:FtsServerProbe", {"schedule": "reference"}),
    "fts-end-to-end": ("attacks.probes.fts_end_to_end:FtsEndToEndProbe", {}),
    "pne-reward": ("attacks.probes.pne:PneRewardProbe", {}),
    "pne-end-to-end": ("attacks.probes.pne:PneEndToEndProbe", {}),
    "pne-unclipped-canary": ("attacks.probes.pne:PneRewardProbe", {"canary_value": 10.0}),
    "fkm-loss": ("attacks.probes.fkm:FkmLossProbe", {}),
    "fkm-end-to-end": ("attacks.probes.fkm:FkmEndToEndProbe", {}),
    "fkm-dataset-end-to-end": ("attacks.probes.fkm:FkmDatasetEndToEndProbe", {}),
    "fkm-nonprivate": ("attacks.probes.fkm:FkmEndToEndProbe", {"private": False}),
    "fedzero-scalar": ("attacks.probes.fedzero:FedZeroScalarProbe", {}),
    "fedzero-end-to-end": ("attacks.probes.fedzero:FedZeroEndToEndProbe", {}),
    "fedzero-record": ("attacks.probes.fedzero:FedZeroEndToEndProbe",
                       {"unit": "record", "rate": 0.8, "noise_multiplier": 2.0, "rounds": 4}),
    "fedzero-broadcast": ("attacks.probes.fedzero:FedZeroBroadcastProbe", {}),
    "fedzero-nonprivate": ("attacks.probes.fedzero:FedZeroEndToEndProbe", {"private": False}),
    "fedzero-broadcast-leak": ("attacks.probes.fedzero:FedZeroBroadcastProbe", {"private": False}),

    "dp-duets-release": ("attacks.probes.duets:DuetsReleaseProbe", {}),
    "dp-duets-release-reward": ("attacks.probes.duets:DuetsReleaseProbe", {"unit": "reward"}),
    "dp-duets-end-to-end": ("attacks.probes.duets_end_to_end:DuetsEndToEndProbe", {}),
    "dp-duets-end-to-end-reward": ("attacks.probes.duets_end_to_end:DuetsEndToEndProbe",
                                   {"unit": "reward", "elimination": "paper"}),
    "duets-end-to-end": ("attacks.probes.duets_end_to_end:PlainDuetsEndToEndProbe", {}),
    "user": ("attacks.probes.user:UserMechanismProbe", {}),
    # one-run probes (``one_run = True``): one run of the system with ``trials`` canaries (``run_once``)
    "flower-app": ("attacks.probes.flower:FlowerAppProbe", {}),
    "dpsgd-one-run": ("attacks.probes.dpsgd_one_run:DpsgdOneRunProbe", {}),
    # DP-SGD on opacus (dpfed.dpsgd): three threat models of one training, and the planted half noise
    "dpsgd-all-iterates": ("attacks.probes.dpsgd:DpsgdAllIteratesProbe", {}),
    "dpsgd-last-iterate": ("attacks.probes.dpsgd:DpsgdLastIterateProbe", {}),
    "dpsgd-final-model": ("attacks.probes.dpsgd:DpsgdFinalModelProbe", {}),
    "bug-dpsgd-half-noise": ("attacks.probes.dpsgd:DpsgdAllIteratesProbe", {"planted_bug": "half-noise"}),
    # planted bugs at the algorithm level (outside the mechanism module), caught end to end; the correct
    # versions are the same probes with planted_bug="none"
    "bug-fts-renormalise-sampled": (
        "attacks.probes.fts_end_to_end:FtsEndToEndProbe",
        {"planted_bug": "renormalise-sampled", "score": "sampled-weight", "noise_multiplier": 8.0},
    ),
    "bug-fts-unnoised-final-aggregate": (
        "attacks.probes.fts_end_to_end:FtsEndToEndProbe",
        {
            "planted_bug": "unnoised-final-aggregate",
            "score": "final-release",
            "canary_norm": 100.0,
            "noise_multiplier": 3.0,
        },
    ),
    "bug-pne-unnoised-final-upload": (
        "attacks.probes.pne:PneEndToEndProbe",
        {"planted_bug": "unnoised-final-upload", "horizon": 5, "final_upload": True},
    ),
    "bug-pne-noise-shared-across-nodes": (
        "attacks.probes.pne:PneEndToEndProbe",
        {"planted_bug": "noise-shared-across-nodes", "score": "node-difference"},
    ),
}


def probe_names() -> list[str]:
    return list(PROBES)


def probe_class(name: str):
    """The class implementing probe ``name`` (ConfigurationError if unknown or not available)."""
    if name not in PROBES:
        raise ConfigurationError("probe", f"unknown probe {name!r}; choose from {', '.join(PROBES)}")
    target = PROBES[name][0]
    module_name, class_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigurationError("probe", f"probe {name!r} is not available ({exc})") from None
    return getattr(module, class_name)


def get_probe(name: str, **params) -> Probe:
    """Build probe ``name`` with its preset parameters overridden by ``params``."""
    cls = probe_class(name)
    merged = {**PROBES[name][1], **params}
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(merged) - known)
    if unknown:
        raise ConfigurationError(unknown[0], f"not a parameter of probe {name!r}; known: {', '.join(sorted(known))}")
    try:
        probe = cls(**merged)
    except TypeError as exc:
        raise ConfigurationError("probe", f"bad parameters for {name!r}: {exc}") from None
    probe.registry_name = name
    return probe


__all__ = ["PROBES", "THREAT_MODELS", "Probe", "check_trials", "check_world", "get_probe", "probe_class", "probe_names"]
