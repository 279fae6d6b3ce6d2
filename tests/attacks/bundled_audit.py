"""Runs one private target of a bundled audit (``configs/audit_*.toml``) as shipped, for the planted-bug
matrix tests: its probes, budgets and seed unchanged; one utility run and the exact accountant only
(utility is not judged there, and the exact accountant alone proves each claim the matrices use)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from reports.audit import AuditOptions
from reports.audit.config import load_config
from reports.audit.runner import run_audit

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def audit_private_target(config_name: str, algorithm: str):
    """The ``TargetResult`` of the bundled ``config_name``'s first target for ``algorithm``."""
    config = load_config(CONFIGS / config_name)
    spec = next(t for t in config["targets"] if t.algorithm == algorithm)
    spec = dataclasses.replace(spec, utility_runs=1, accountants=("exact",))
    options = AuditOptions(seed=config["seed"], executor="inprocess", progress=False, estimate=False)
    (result,) = run_audit([spec], options, log=lambda _: None)
    return result
