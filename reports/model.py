"""The audit report model: one JSON document, versioned by a JSON schema, that every renderer reads.

A report is a plain, JSON-serialisable ``dict`` (so a saved ``report.json`` *is* the model and
re-rendering it cannot drift from the original). This module builds its parts, validates a report
against ``reports/schema/report.schema.json`` and reads/writes it atomically.

Layout (see the schema for every field)::

    {"schema": "dpfed-audit/report", "schema_version": "2.2", "title", "status", "exit_code",
     "findings": {"count", "worst", "by_severity"}, "targets": [target, ...], "provenance": {...}}

``findings`` (added in 2.1; a 2.0 report without it is still read) tallies the targets' findings that
call for attention (every severity but "info"), so that a PASS never hides a high-severity finding.

Each target is a ``reports.audit.model.TargetResult`` as JSON: one audited system with its claim,
accounting, calibration check, planner, probes, verdicts, utility and findings, all numbers and ids
(the renderers write the words). A section that could not be produced carries
``{"available": false, "reason": ...}``; infinite numbers are written as the string "inf".
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from accounting.errors import ConfigurationError
from accounting.zero_out import relation_note
from attacks.files import atomic_write_text
from reports.findings_tally import ATTENTION, SEVERITIES, findings_tally, verdict_headline  # noqa: F401 - re-exported

SCHEMA_NAME = "dpfed-audit/report"
SCHEMA_VERSION = "2.2"  # 2.1: the top-level "findings" tally; 2.2: probes say PASS / INCONCLUSIVE
SCHEMA_PATH = Path(__file__).with_name("schema") / "report.schema.json"
STATUSES = ("PASS", "VIOLATION", "INCONCLUSIVE")
# Fields that legitimately differ between two runs of the same configuration and seed.
VOLATILE_PROVENANCE_FIELDS = ("started", "finished", "duration_seconds", "reused_sections", "reused_from", "command")


def is_available(section) -> bool:
    return isinstance(section, dict) and section.get("available", True) is not False


def as_number(value):
    """A report number as a float (the sanitiser writes infinities as "inf"); None stays None."""
    if value is None:
        return None
    return float(value)


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
    note = relation_note(claim.get("neighbouring", ""))
    return text + "." + (f" Neighbours: {note}." if note else "")


def fmt_number(value) -> str:
    """Short human formatting of a number shared by the renderers ('n/a' for None, 'inf' for infinity)."""
    if value is None:
        return "n/a"
    value = float(value)
    if not math.isfinite(value):
        return "inf" if value > 0 else ("-inf" if value < 0 else "nan")
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
        return f"{value:.3g}"
    return f"{value:.4g}"


def new_report(title: str, targets, provenance: dict) -> dict:
    """The JSON report of typed target results (``reports.audit.model.TargetResult``): the one place
    where the audit becomes JSON. Its status is the worst target verdict."""
    from reports.audit.model import to_plain
    from reports.audit.verdicts import worst_status
    from reports.exit_codes import exit_code_for_status

    status = worst_status(t.verdict.status for t in targets).value
    report = to_plain(
        {
            "schema": SCHEMA_NAME,
            "schema_version": SCHEMA_VERSION,
            "title": title,
            "status": status,
            "exit_code": int(exit_code_for_status(status)),
            "findings": None,
            "targets": list(targets),
            "provenance": provenance,
        }
    )
    report["findings"] = findings_tally(report["targets"])
    return report


@lru_cache(maxsize=1)
def load_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def validate_report(report: dict) -> dict:
    """Validate against the JSON schema, then for consistency (``reports.consistency``); a problem
    raises ConfigurationError naming the path, in one line."""
    import jsonschema

    from reports.consistency import check_consistency

    validator = jsonschema.Draft202012Validator(load_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(report))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "report"
        message = " ".join(error.message.split())
        message = message if len(message) <= 160 else message[:157] + "..."
        raise ConfigurationError(where, f"does not match report schema {SCHEMA_VERSION}: {message}")
    check_consistency(report)
    return report


def strip_volatile(report: dict) -> dict:
    """A copy without timestamps and durations, for comparing two runs of the same configuration."""
    copy = json.loads(json.dumps(report))
    for key in VOLATILE_PROVENANCE_FIELDS:
        copy.get("provenance", {}).pop(key, None)
    return copy


def dumps_report(report: dict) -> str:
    from attacks.files import dumps_json

    return dumps_json(report, indent=2) + "\n"


def save_report(report: dict, path) -> None:
    atomic_write_text(path, dumps_report(validate_report(report)))


def _no_constant(token: str):
    """``NaN`` and ``Infinity`` are not JSON (a report writes non-finite numbers as strings such as "inf")."""
    raise ValueError(f"{token} is not a JSON number; reports write non-finite numbers as strings")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is beyond the range of a number")
    return value


def _finite_int(text: str) -> int:
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise ValueError(f"{text[:40]}... is beyond the range of a number") from None
    return value


def _no_duplicate_keys(pairs):
    """An object naming a key twice is refused: JSON readers differ on which value wins."""
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"key {key[:40]!r} given twice in one object")
        seen[key] = value
    return seen


def _what_it_is(data) -> str:
    """`` (it is ...)`` where ``data`` is the JSON another command writes (``dpaudit flower``, ``opacus-check``)."""
    if isinstance(data, dict) and {"app", "starts", "verdict"} <= data.keys():
        return " (it is the JSON `dpaudit flower` writes: its verdict and findings are what that command printed)"
    if isinstance(data, dict) and {"rows", "findings", "verdict"} <= data.keys():
        return " (it is the JSON `dpaudit opacus-check` writes: its verdict and findings are what that command printed)"
    return ""


def load_report(path) -> dict:
    """Read and validate a saved report; unreadable or invalid files raise ConfigurationError."""
    path = Path(path)
    try:
        report = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant,
                            parse_float=_finite_float, parse_int=_finite_int,
                            object_pairs_hook=_no_duplicate_keys)
    except FileNotFoundError:
        raise ConfigurationError("result", f"no such file: {path}") from None
    except (OSError, ValueError) as exc:  # ValueError: not JSON, not UTF-8, a NaN or infinite number
        raise ConfigurationError("result", f"cannot read {path} as JSON ({exc})") from None
    except RecursionError:
        raise ConfigurationError("result", f"cannot read {path} as JSON (nested too deeply)") from None
    if not isinstance(report, dict) or report.get("schema") != SCHEMA_NAME:
        raise ConfigurationError("result", f"{path} is not a dpfed-audit report{_what_it_is(report)}; `dpaudit "
                                 "report` renders the report.json of `dpaudit audit` or `dpaudit estimate`")
    major = str(report.get("schema_version", "")).split(".")[0]
    if major != SCHEMA_VERSION.split(".")[0]:
        raise ConfigurationError(
            "schema_version",
            f"report version {report.get('schema_version')!r} is not readable by schema {SCHEMA_VERSION}",
        )
    return validate_report(_in_todays_words(report))


def _in_todays_words(report: dict) -> dict:
    """A report before schema 2.2 with its probes' CONSISTENT / UNTESTABLE read as PASS / INCONCLUSIVE."""
    from accounting.vocabulary import OLD_VERDICT_WORDS

    for target in report.get("targets", []) if isinstance(report.get("targets"), list) else []:
        if not isinstance(target, dict):
            continue
        empirical = (target.get("verdict") or {}).get("empirical") if isinstance(target.get("verdict"), dict) else None
        if isinstance(empirical, dict) and empirical.get("status") in OLD_VERDICT_WORDS:
            empirical["status"] = OLD_VERDICT_WORDS[empirical["status"]]
        for probe in target.get("probes", []) if isinstance(target.get("probes"), list) else []:
            if isinstance(probe, dict) and probe.get("status") in OLD_VERDICT_WORDS:
                probe["status"] = OLD_VERDICT_WORDS[probe["status"]]
    return report
