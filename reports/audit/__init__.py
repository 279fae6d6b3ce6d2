"""The audit: typed claims, targets, sections, findings and verdicts (between ``attacks`` and the
renderers; nothing below ``reports`` imports it).

``load_config`` reads a configuration strictly, ``run_audit`` audits its targets into ``TargetResult``
objects, ``report_document`` (``reports.model``) turns them into the JSON report at the boundary.
"""

from reports.audit.config import DEFAULT_CONFIG, load_config, parse_config
from reports.audit.model import Analytic, Claim, Empirical, Finding, Status, TargetResult, TargetSpec
from reports.audit.runner import AuditOptions, run_audit
from reports.audit.targets import ProbeDeclined, build_target, register
from reports.audit.verdicts import VERDICT_TABLE

__all__ = [
    "DEFAULT_CONFIG",
    "VERDICT_TABLE",
    "Analytic",
    "AuditOptions",
    "Claim",
    "Empirical",
    "Finding",
    "ProbeDeclined",
    "Status",
    "TargetResult",
    "TargetSpec",
    "build_target",
    "load_config",
    "parse_config",
    "register",
    "run_audit",
]
