"""`dpaudit run` output files and tables: each variant writes its own files, an earlier result is never
overwritten silently (exit 2 before any work, --force overwrites), a single run shows no standard error
(n/a, not 0.00), and FKM's exploration radius is not printed as "delta"."""

from __future__ import annotations

import json

from reports.cli import main

FKM = ["run", "dp-fkm", "--horizon", "400", "--exploration", "0.5", "--accountants", "rdp"]


def _names(directory) -> set[str]:
    return {p.name for p in directory.iterdir()}


def test_fkm_event_and_dataset_levels_write_different_files(tmp_path):
    assert main([*FKM, "--out", str(tmp_path)]) == 0
    assert main([*FKM, "--unit", "dataset", "--records", "20", "--out", str(tmp_path)]) == 0
    assert _names(tmp_path) == {
        "fkm_dp-fkm_linear_event.json",
        "fkm_dp-fkm_linear_event.png",
        "fkm_dp-fkm_linear_dataset.json",
        "fkm_dp-fkm_linear_dataset.png",
    }
    assert json.loads((tmp_path / "fkm_dp-fkm_linear_dataset.json").read_text())["privacy"]["unit"] == "dataset"


def test_a_rerun_is_refused_without_force_and_overwrites_with_it(tmp_path, capsys):
    assert main([*FKM, "--out", str(tmp_path)]) == 0
    path = tmp_path / "fkm_dp-fkm_linear_event.json"
    first = path.read_bytes()
    assert main([*FKM, "--seed", "1", "--out", str(tmp_path)]) == 2
    assert path.read_bytes() == first  # refused: nothing written
    assert "pass --force" in capsys.readouterr().err
    assert main([*FKM, "--seed", "1", "--out", str(tmp_path), "--force"]) == 0
    assert path.read_bytes() != first  # the seed-1 result replaced it


def test_force_appears_in_every_run_help(capsys):
    for algorithm in ("dp-fts", "dp-fed-pne", "dp-fkm", "dp-fedzero", "dp-duets"):
        assert main(["run", algorithm, "--help"]) == 0
        assert "--force" in capsys.readouterr().out


def test_pne_calibrations_and_fedzero_units_write_different_files(tmp_path):
    for calibration in ("classic", "analytic"):
        main(
            [
                "run",
                "dp-fed-pne",
                "--horizon",
                "50",
                "--calibration",
                calibration,
                "--accountants",
                "rdp",
                "--out",
                str(tmp_path),
            ]
        )
    for unit in ("worker", "record"):
        assert (
            main(
                ["run", "dp-fedzero", "--rounds", "20", "--unit", unit, "--accountants", "rdp", "--out", str(tmp_path)]
            )
            == 0
        )
    names = _names(tmp_path)
    assert {"pne_dp-fed-pne_garland_classic.json", "pne_dp-fed-pne_garland_analytic.json"} <= names
    assert {"fedzero_dp-fedzero_l2_worker-scalar.json", "fedzero_dp-fedzero_l2_record-scalar.json"} <= names


def _stderr_column(out: str) -> list[str]:
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if "std error" in line)
    start = lines[head].index("std error")
    rows = lines[head + 2 : head + 7]
    return [r[start:].split()[0] for r in rows if r.strip() and r[0].isdigit()]


def test_one_run_shows_no_standard_error_and_two_runs_do(tmp_path, capsys):
    main([*FKM, "--out", str(tmp_path / "a")])
    one = capsys.readouterr().out
    assert _stderr_column(one) and set(_stderr_column(one)) == {"n/a"}
    main([*FKM, "--runs", "2", "--out", str(tmp_path / "b")])
    two = _stderr_column(capsys.readouterr().out)
    assert "n/a" not in two and float(two[-1]) > 0


def test_fkm_prints_its_exploration_radius_not_a_second_delta(tmp_path, capsys):
    main([*FKM, "--out", str(tmp_path)])
    heading = capsys.readouterr().out.splitlines()[0]
    assert "exploration radius=" in heading and "delta=" not in heading


def test_an_infinite_epsilon_is_written_as_inf_not_null(tmp_path):
    """Noise 1e-300: the exact accountant's epsilon is inf (status ok). The run's JSON wrote null, which reads
    as "no value" (an unsupported accountant's null); ``account --format json`` writes "inf"."""
    argv = ["run", "dp-fedzero", "--rounds", "20", "--noise-multiplier", "1e-300", "--accountants", "exact"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    row = json.loads((tmp_path / "fedzero_dp-fedzero_l2_worker-scalar.json").read_text())["privacy"]["accounting"][0]
    assert row["name"] == "exact" and row["status"] == "ok" and row["epsilon"] == "inf"


def test_an_empty_out_is_refused_not_read_as_the_current_directory(tmp_path, monkeypatch, capsys):
    """`--out ""` wrote the result files into the current directory (Path("") is "."), silently."""
    monkeypatch.chdir(tmp_path)
    for argv in ([*FKM], ["run", "fed-pne", "--horizon", "20"], ["run", "dp-fedzero", "--rounds", "10"]):
        assert main([*argv, "--out", ""]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "out: is empty" in err
    assert list(tmp_path.iterdir()) == []
