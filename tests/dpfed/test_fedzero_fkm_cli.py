"""``dpaudit run fkm|dp-fkm|fedzero|dp-fedzero``: outputs, privacy section, bad input (exit code 2)."""

import json

import pytest

from reports.cli import main


def test_fkm_prints_regret_and_the_corrected_bound(tmp_path, capsys):
    assert main(["run", "fkm", "--horizon", "500", "--runs", "3", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "corrected bound of notes C.3" in out and "not private" in out
    data = json.loads((tmp_path / "fkm_fkm_linear.json").read_text())
    assert len(data["regret_mean"]) == 500 and data["privacy"] is None
    assert data["regret_mean"][-1] < data["regret_bound"]
    assert (tmp_path / "fkm_fkm_linear.png").read_bytes()[:4] == b"\x89PNG"


def test_dp_fkm_event_level_is_one_gaussian_release(tmp_path, capsys):
    code = main(
        [
            "run",
            "dp-fkm",
            "--horizon",
            "3000",
            "--claim-epsilon",
            "2",
            "--delta",
            "1e-6",
            "--accountants",
            "exact,rdp",
            "--out",
            str(tmp_path),
            "--save-transcript",
        ]
    )
    assert code == 0 and "ONE such release" in capsys.readouterr().out
    data = json.loads((tmp_path / "fkm_dp-fkm_linear_event.json").read_text())
    exact = [row for row in data["privacy"]["accounting"] if row["name"] == "exact"][0]
    assert exact["epsilon"] == pytest.approx(2.0, rel=1e-6) and data["privacy"]["releases_per_unit"] == 1
    assert len(data["transcript"]["messages"]) == 2 * 3000


def test_dp_fkm_dataset_level_composes_over_rounds(tmp_path):
    code = main(
        [
            "run",
            "dp-fkm",
            "--unit",
            "dataset",
            "--horizon",
            "200",
            "--records",
            "20",
            "--rate",
            "0.2",
            "--accountants",
            "rdp",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    data = json.loads((tmp_path / "fkm_dp-fkm_linear_dataset.json").read_text())
    assert data["privacy"]["releases_per_unit"] == 200


@pytest.mark.parametrize("geometry", ["l2", "l1"])
def test_fedzero_prints_regret_bracket_communication_and_the_remark(tmp_path, capsys, geometry):
    code = main(["run", "fedzero", "--geometry", geometry, "--rounds", "300", "--runs", "2", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "Theorem 4.1 bracket" in out and "1200 reals uplink" in out
    assert "not a differential-privacy property" in out
    data = json.loads((tmp_path / f"fedzero_fedzero_{geometry}.json").read_text())
    assert data["summary"]["uplink_reals"] == 1200 and len(data["regret_mean"]) == 300


def test_dp_fedzero_reports_n_rounds_of_the_subsampled_gaussian(tmp_path):
    code = main(
        [
            "run",
            "dp-fedzero",
            "--rounds",
            "50",
            "--rate",
            "0.5",
            "--noise",
            "vector",
            "--accountants",
            "rdp",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    data = json.loads((tmp_path / "fedzero_dp-fedzero_l2_worker-vector.json").read_text())
    assert data["privacy"]["releases_per_unit"] == 50 and data["privacy"]["noise"] == "vector"


@pytest.mark.parametrize(
    "argv, field",
    [
        (["fkm", "--horizon", "10"], "horizon"),
        (["fkm", "--loss", "cubic"], "loss"),
        (["dp-fkm", "--unit", "user"], "unit"),
        (["dp-fkm", "--rate", "0.2"], "rate"),
        (["dp-fkm", "--unit", "dataset", "--claim-epsilon", "1"], "epsilon"),
        (["dp-fkm", "--claim-epsilon", "1", "--noise-multiplier", "2"], "epsilon"),
        (["fedzero", "--geometry", "l3"], "geometry"),
        (["dp-fedzero", "--unit", "record", "--noise", "vector"], "noise"),
        (["fedzero", "--dim", "2"], "dim"),
        (["dp-fedzero", "--rate", "2"], "rate"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, capsys, argv, field):
    with pytest.raises(SystemExit) as info:
        raise SystemExit(main(["run", *argv, "--out", str(tmp_path)]))
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err


def test_dp_fkm_dataset_level_at_a_vanishing_rate(tmp_path, capsys):
    # q N = 1e-299: (q N)^2 underflowed (ZeroDivisionError in the feedback bound B sqrt(1 + 1/(qN) +
    # sigma^2/(qN)^2)) and the bound's square overflowed (OverflowError), both exit 4. The corrected
    # exploration radius is then far beyond the ball: one line, exit 2; with --exploration the run's
    # regret bound is infinite (JSON null).
    base = ["run", "dp-fkm", "--unit", "dataset", "--records", "10", "--rate", "1e-300", "--noise-multiplier", "1",
            "--horizon", "10", "--out", str(tmp_path)]
    assert main(base) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "horizon: the corrected exploration radius" in err
    assert main([*base, "--exploration", "0.5"]) == 0
    assert "T^(3/4) at the optimum): inf;" in capsys.readouterr().out


def test_dp_fkm_event_level_huge_noise_is_bad_input_or_runs_not_a_crash(tmp_path, capsys):
    # sigma = 1e300: the feedback bound B sqrt(1 + 4 sigma^2) squared sigma and raised OverflowError (exit 4)
    argv = ["run", "dp-fkm", "--horizon", "3000", "--noise-multiplier", "1e300", "--accountants", "exact"]
    assert main([*argv, "--out", str(tmp_path)]) == 2  # the corrected exploration radius exceeds the domain
    assert "exploration radius" in capsys.readouterr().err
    assert main([*argv, "--exploration", "0.5", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "fkm_dp-fkm_linear_event.json").read_text())
    assert data["privacy"]["accounting"][0]["epsilon"] == 0.0  # one Gaussian release at sigma 1e300
