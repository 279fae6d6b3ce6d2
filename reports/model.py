"""The audit report model: one JSON document, versioned by a JSON schema, that every renderer reads.

A report is a plain, JSON-serialisable ``dict`` (so a saved ``report.json`` *is* the model and
re-rendering it cannot drift from the original). This module builds its parts, validates a report
against ``reports/schema/report.schema.json`` and reads/writes it atomically.

Layout (see the schema for every field)::

    {"schema": "dpfed-audit/report", "schema_version": "1.0", "title", "status", "exit_code",
     "summary": [str], "targets": [target, ...], "provenance": {...}}

Each target is one audited system (an algorithm configuration or a bare mechanism) with its claim,
accounting, calibration check, planner ceiling, probes, verdict, utility and computed findings. A
section that could not be produced carries ``{"available": false, "reason": ...}`` instead of numbers.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from accounting.errors import ConfigurationError
from attacks.files import atomic_write_text

SCHEMA_NAME = "dpfed-audit/report"
SCHEMA_VERSION = "1.0"
SCHEMA_PATH = Path(__file__).with_name("schema") / "report.schema.json"
STATUSES = ("PASS", "VIOLATION", "INCONCLUSIVE")
EXIT_CODES = {"PASS": 0, "VIOLATION": 1, "INCONCLUSIVE": 3}
# Fields that legitimately differ between two runs of the same configuration and seed.
VOLATILE_PROVENANCE_FIELDS = ("started", "finished", "duration_seconds", "resumed_sections")


def worst_status(statuses) -> str:
    """VIOLATION beats INCONCLUSIVE beats PASS; an empty list is INCONCLUSIVE."""
    statuses = list(statuses)
    if "VIOLATION" in statuses:
        return "VIOLATION"
    if not statuses or "INCONCLUSIVE" in statuses:
        return "INCONCLUSIVE"
    return "PASS"


def unavailable(reason: str) -> dict:
    """A section that could not be produced, with the reason shown in every rendering."""
    return {"available": False, "reason": str(reason)}


def is_available(section) -> bool:
    return isinstance(section, dict) and section.get("available", True) is not False


def clean_number(value):
    """A JSON-safe float (None for NaN/inf, which JSON cannot hold)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def jsonable(value):
    """Recursively turn numpy scalars/arrays, tuples and enums into plain JSON values."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return jsonable(value.tolist())
    if hasattr(value, "value") and value.__class__.__module__.startswith("accounting"):
        return value.value  # Sampling / Neighbouring enums
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return clean_number(value)
    return str(value)


def claim_in_words(claim: dict) -> str:
    """One sentence stating the claim, its unit of privacy and its neighbouring relation."""
    relation = {"add-remove": "adding or removing", "replace-one": "replacing"}.get(
        claim.get("neighbouring", ""), claim.get("neighbouring", "changing")
    )
    unit = claim.get("unit", "one record")
    eps, delta = fmt_number(claim["epsilon"]), fmt_number(claim["delta"])
    stated = f"{claim['delta_given']} = {delta}" if claim.get("delta_given") else delta
    text = (
        f"({eps}, {stated})-differential privacy: for any two inputs that differ by {relation} {unit}, every "
        f"set of outputs has probability at most e^{eps} times larger plus {delta} under one than the other"
    )
    if claim.get("source"):
        text += f" (source: {claim['source']})"
    return text + "."


def fmt_number(value) -> str:
    """Short human formatting of a number shared by the renderers ('n/a' for None)."""
    if value is None:
        return "n/a"
    value = float(value)
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
        return f"{value:.3g}"
    return f"{value:.4g}"


def new_report(title: str, targets: list[dict], provenance: dict) -> dict:
    """Assemble a report; its status is the worst target verdict."""
    status = worst_status(t["verdict"]["status"] for t in targets)
    summary = [f"{t['name']}: {t['verdict']['status']} - {t['verdict']['reason']}" for t in targets]
    return jsonable(
        {
            "schema": SCHEMA_NAME,
            "schema_version": SCHEMA_VERSION,
            "title": title,
            "status": status,
            "exit_code": EXIT_CODES[status],
            "summary": summary,
            "targets": targets,
            "provenance": provenance,
        }
    )


@lru_cache(maxsize=1)
def load_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def validate_report(report: dict) -> dict:
    """Validate against the JSON schema; a mismatch raises ConfigurationError naming the field."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.absolute_path) or "report"
        raise ConfigurationError(where, f"report does not match schema {SCHEMA_VERSION}: {err.message}")
    return report


def strip_volatile(report: dict) -> dict:
    """A copy without timestamps and durations, for comparing two runs of the same configuration."""
    copy = json.loads(json.dumps(report))
    for key in VOLATILE_PROVENANCE_FIELDS:
        copy.get("provenance", {}).pop(key, None)
    return copy


def dumps_report(report: dict) -> str:
    return json.dumps(report, indent=2, sort_keys=True, allow_nan=False) + "\n"


def save_report(report: dict, path) -> None:
    atomic_write_text(path, dumps_report(validate_report(report)))


def load_report(path) -> dict:
    """Read and validate a saved report; unreadable or invalid files raise ConfigurationError."""
    path = Path(path)
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigurationError("result", f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigurationError("result", f"cannot read {path} as JSON ({exc})") from None
    if not isinstance(report, dict) or report.get("schema") != SCHEMA_NAME:
        raise ConfigurationError("result", f"{path} is not a dpfed-audit report")
    major = str(report.get("schema_version", "")).split(".")[0]
    if major != SCHEMA_VERSION.split(".")[0]:
        raise ConfigurationError(
            "schema_version",
            f"report version {report.get('schema_version')!r} is not readable by schema {SCHEMA_VERSION}",
        )
    return validate_report(report)
