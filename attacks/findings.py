"""Findings of a set-up check (Flower, opacus): a code, a severity, a one-line message and the numbers behind it."""

from __future__ import annotations

from dataclasses import dataclass, field

SEVERITIES = ("critical", "high", "medium", "low", "info")


@dataclass(frozen=True)
class Finding:
    """One finding; ``values`` holds the numbers the message states (epsilons, rates, counts)."""

    code: str
    severity: str
    message: str
    values: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"code": self.code, "severity": self.severity, "message": self.message, "values": dict(self.values)}


def worst(findings) -> str | None:
    """The most severe severity among ``findings`` (None when there are none)."""
    ranks = [SEVERITIES.index(f.severity) for f in findings]
    return SEVERITIES[min(ranks)] if ranks else None
