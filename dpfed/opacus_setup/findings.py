"""Findings of the opacus check: ``dpfed.findings.Finding`` (a code, a severity, a one-line message and the
numbers behind it) under this package's name."""

from __future__ import annotations

from dpfed.findings import SEVERITIES, Finding, worst

OpacusFinding = Finding

__all__ = ["SEVERITIES", "OpacusFinding", "worst"]
