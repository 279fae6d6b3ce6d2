"""Findings of the Flower checks: ``dpfed.findings.Finding`` (a code, a severity, a one-line message and the
numbers behind it) under this package's name."""

from __future__ import annotations

from dpfed.findings import SEVERITIES, Finding, worst

FlowerFinding = Finding

__all__ = ["SEVERITIES", "FlowerFinding", "worst"]
