"""`dpaudit attack` speaks the audit's vocabulary (PASS / VIOLATION / INCONCLUSIVE, exit 0 / 1 / 3), names planted
bugs, shows a non-private probe's epsilon as inf, and lists probes in aligned columns."""

from __future__ import annotations

import pytest

from attacks.verdict import STATUSES, decide
from reports.audit.model import Empirical
from reports.cli import main


def test_attack_and_audit_share_one_vocabulary():
    from reports.audit.model import Status
    from reports.exit_codes import ExitCode

    assert set(STATUSES) == {e.value for e in Empirical} == {s.value for s in Status}
    assert all(ExitCode[status].name == status for status in STATUSES)
    assert "CONSISTENT" not in STATUSES and "UNTESTABLE" not in STATUSES


def test_no_evidence_is_pass_and_too_few_trials_inconclusive():
    assert decide(2.0, 1e-5, [], trials=10**5).status == "PASS"
    assert decide(20.0, 1e-5, [], trials=100).status == "INCONCLUSIVE"


def test_attack_prints_pass_not_consistent(capsys):
    assert main(["attack", "gaussian", "--trials", "2000", "--seed", "1", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "verdict     PASS" in out and "CONSISTENT" not in out


@pytest.mark.parametrize(
    "probe, base, bug",
    [("bug-weak-noise", "gaussian", "weak-noise"), ("bug-no-clip", "subsampled-gaussian", "no-clip")],
)
def test_a_planted_bug_probe_names_its_bug(capsys, probe, base, bug):
    main(["attack", probe, "--trials", "500", "--seed", "1", "--no-progress"])
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"probe       {probe} ({base} with the planted bug '{bug}')")


def test_a_correct_probe_is_its_name(capsys):
    main(["attack", "gaussian", "--trials", "500", "--seed", "1", "--no-progress"])
    assert capsys.readouterr().out.startswith("probe       gaussian, output only: ")


def test_a_non_private_probe_shows_infinite_epsilon(capsys):
    assert main(["attack", "fkm-nonprivate", "--trials", "200", "--seed", "1", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "true eps    inf at delta" in out and "true eps    -" not in out
    assert "not private, epsilon = inf" in out


def test_list_columns_are_aligned_and_never_run_together(capsys):
    from attacks.probes import PROBES

    assert main(["attack", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, rule, rows = lines[0], lines[1], lines[2:]
    starts = [i for i, c in enumerate(rule) if c == "-" and (i == 0 or rule[i - 1] == " ")]
    assert len(starts) == 3 and header[starts[1] :].startswith("threat model")
    assert [r[: starts[1]].strip() for r in rows] == list(PROBES)
    for row in rows:  # each column starts where its header does, two spaces after the longest entry before
        assert row[starts[1] - 2 : starts[1]] == "  " and row[starts[2] - 2 : starts[2]] == "  "
        assert row[starts[1]] != " " and row[starts[2]] != " " and row == row.rstrip()
    assert any("PLANTED BUG 'noise-shared-across-nodes'" in r for r in rows)
