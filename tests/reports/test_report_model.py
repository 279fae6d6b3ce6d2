"""Report model: schema validation, loading, atomic writes, claim wording."""

from __future__ import annotations

import json
import os

import pytest

from accounting.errors import ConfigurationError
from reports import model
from tests.reports.synthetic_report import synthetic_report


def test_synthetic_report_validates_and_round_trips(tmp_path):
    report = synthetic_report()
    model.validate_report(report)
    path = tmp_path / "report.json"
    model.save_report(report, path)
    assert model.load_report(path) == json.loads(json.dumps(report))
    assert report["status"] == "INCONCLUSIVE" and report["exit_code"] == 3


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda r: r.update(status="MAYBE"), "status"),
        (lambda r: r["targets"][0]["claim"].update(delta=1.0), "targets/0/claim/delta"),
        (lambda r: r["targets"][0].pop("verdict"), "targets/0"),
        (lambda r: r["targets"][0]["probes"][0]["bounds"][0].update(epsilon="a lot"), "targets/0/probes/0"),
        (lambda r: r.update(status="PASS", exit_code=0), "status"),  # the targets say INCONCLUSIVE
        (lambda r: r.update(exit_code=0), "exit_code"),
        (lambda r: r["targets"][1]["verdict"].update(status="PASS"), "targets/1/verdict/status"),
        (lambda r: r["targets"][0]["probes"][0]["roc"]["y"].pop(), "targets/0/probes/0/roc"),
        (lambda r: r["provenance"].update(config_hash="md5:x"), "provenance/config_hash"),
    ],
)
def test_schema_rejects_bad_reports_naming_the_field(mutate, field):
    report = synthetic_report()
    mutate(report)
    with pytest.raises(ConfigurationError) as err:
        model.validate_report(report)
    assert err.value.field.startswith(field)


def test_load_report_refuses_other_files(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigurationError, match="result"):
        model.load_report(bad)
    bad.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ConfigurationError, match="not a dpfed-audit report"):
        model.load_report(bad)
    future = synthetic_report()
    future["schema_version"] = "3.0"
    bad.write_text(json.dumps(future))
    with pytest.raises(ConfigurationError, match="schema_version"):
        model.load_report(bad)
    with pytest.raises(ConfigurationError, match="no such file"):
        model.load_report(tmp_path / "missing.json")


def test_atomic_write_never_leaves_a_half_written_file(tmp_path, monkeypatch):
    path = tmp_path / "report.md"
    model.atomic_write_text(path, "old\n")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        model.atomic_write_text(path, "new " * 10000)
    monkeypatch.undo()
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # the temporary file is gone
    model.atomic_write_text(path, "new\n")
    assert path.read_text() == "new\n" and oct(path.stat().st_mode & 0o044) != "0o0"


def test_claim_in_words_names_unit_and_relation():
    text = model.claim_in_words(
        {
            "epsilon": 15.17,
            "delta": 29**-1.1,
            "neighbouring": "add-remove",
            "unit": "one agent (all of its uploads)",
        }
    )
    assert "adding or removing one agent (all of its uploads)" in text and "15.17" in text and "0.02462" in text
    text = model.claim_in_words({"epsilon": 1, "delta": 1e-5, "neighbouring": "replace-one", "unit": "one reward"})
    assert "replacing one reward" in text


def test_schema_error_is_one_short_line():
    report = synthetic_report()
    report["targets"][0]["accounting"]["rows"][0]["epsilon"] = {"deeply": ["nested"] * 200}
    with pytest.raises(ConfigurationError) as err:
        model.validate_report(report)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300
    assert err.value.field.startswith("targets/0/accounting")


def test_strip_volatile():
    stripped = model.strip_volatile(synthetic_report())
    assert "started" not in stripped["provenance"] and "seed" in stripped["provenance"]


def _critical_finding_report(with_critical: bool) -> dict:
    """Target 1 (the table gives INCONCLUSIVE) made a VIOLATION by rule critical-finding, as the runner does
    for a Flower app whose transcript shows less noise than accounted."""
    from reports.findings_tally import findings_tally

    report = synthetic_report()
    target = report["targets"][1]
    target["verdict"].update(status="VIOLATION", rule="critical-finding")
    severity = "critical" if with_critical else "medium"
    target["findings"].append({"id": "flower-check", "severity": severity, "values": {"code": "noise-below-accounted"}})
    report["findings"] = findings_tally(report["targets"])
    report.update(status="VIOLATION", exit_code=1)
    return report


def test_a_critical_finding_violation_is_consistent_only_with_a_critical_finding():
    model.validate_report(_critical_finding_report(with_critical=True))  # `dpaudit audit` exited 2 here before
    with pytest.raises(ConfigurationError) as err:
        model.validate_report(_critical_finding_report(with_critical=False))
    assert err.value.field == "targets/1/verdict/rule"


def _raise_probe_bound(report: dict) -> None:
    """The probe's rigorous bound raised above the claim, the lower bound and the gap edited to match, the
    probe's status (PASS) and the target's verdict kept: rendered as before, with a bound above the
    claim and above the upper bound."""
    target = report["targets"][0]
    target["probes"][0]["bounds"][0]["epsilon"] = 1.5
    verdict = target["verdict"]
    verdict["empirical"]["lower_bound"]["epsilon"] = 1.5
    verdict["gap"] = verdict["upper_bound"]["epsilon"] - 1.5


def _edit_upper_bound(report: dict) -> None:
    verdict = report["targets"][0]["verdict"]
    verdict["upper_bound"]["epsilon"] = 0.3
    verdict["gap"] = 0.3 - verdict["empirical"]["lower_bound"]["epsilon"]


@pytest.mark.parametrize(
    "mutate, field",
    [
        (_raise_probe_bound, "targets/0/probes/0/status"),
        (lambda r: r["targets"][0]["probes"][0].update(p_value=0.001), "targets/0/probes/0/status"),
        (lambda r: r["targets"][0]["probes"][0].update(ceiling=0.5), "targets/0/probes/0/status"),
        (_edit_upper_bound, "targets/0/verdict/upper_bound"),
        (lambda r: r["targets"][0]["claim"].update(delta=0.5), "targets/0/accounting/rows/0/delta"),
    ],
)
def test_edited_numbers_that_keep_a_verdict_are_refused(mutate, field):
    """Each edit left every verdict field as it was, so the report rendered its old verdict beside numbers
    that contradict it; the probe's status and the upper bound are now derived again from its numbers."""
    report = synthetic_report()
    model.validate_report(report)
    mutate(report)
    with pytest.raises(ConfigurationError) as err:
        model.validate_report(report)
    assert err.value.field.startswith(field)


def test_a_key_given_twice_is_refused(tmp_path):
    """JSON readers differ on which of two values wins; the last one won silently."""
    text = json.dumps(synthetic_report())
    path = tmp_path / "report.json"
    path.write_text('{"status": "PASS", ' + text[1:])
    with pytest.raises(ConfigurationError, match="given twice"):
        model.load_report(path)
