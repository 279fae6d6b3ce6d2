"""The findings a report's headline counts: how many call for attention, and the worst severity."""

from __future__ import annotations

SEVERITIES = ("critical", "high", "medium", "low", "info")  # most severe first
ATTENTION = SEVERITIES[:-1]  # "info" findings state facts (the claim holds, ...); they are not counted


def findings_tally(targets: list[dict]) -> dict:
    """The findings of ``targets`` (report dicts) that call for attention: their number, the worst
    severity (None without any) and the number at each severity (info included, for completeness)."""
    severities = [x["severity"] for t in targets for x in t.get("findings", [])]
    counted = [s for s in severities if s in ATTENTION]
    return {
        "count": len(counted),
        "worst": min(counted, key=SEVERITIES.index) if counted else None,
        "by_severity": {s: severities.count(s) for s in SEVERITIES},
    }


def verdict_headline(status: str, tally: dict) -> str:
    """The verdict with its findings: "PASS, with 2 findings (worst: high)" or "PASS, no findings"."""
    if not tally["count"]:
        return f"{status}, no findings"
    plural = "s" if tally["count"] != 1 else ""
    return f"{status}, with {tally['count']} finding{plural} (worst: {tally['worst']})"
