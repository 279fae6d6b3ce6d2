"""Findings of the opacus check: ``attacks.findings.Finding`` (a code, a severity, a one-line message and the
numbers behind it) under this package's name."""

from __future__ import annotations

from attacks.findings import SEVERITIES, Finding, worst

OpacusFinding = Finding

__all__ = ["SEVERITIES", "OpacusFinding", "worst"]
