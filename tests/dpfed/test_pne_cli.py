"""``dpaudit run fed-pne|dp-fed-pne|hct``: outputs, privacy report, bad input (exit code 2)."""

import json
from pathlib import Path

import pytest

from reports.cli import main

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_fed_pne_prints_regret_and_rounds_and_writes_json_and_plot(tmp_path, capsys):
    code = main(["run", "fed-pne", "--clients", "5", "--horizon", "800", "--runs", "3", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "avg per-client cumulative regret" in out and "communication rounds" in out
    data = json.loads((tmp_path / "pne_fed-pne_garland.json").read_text())
    assert len(data["regret_mean"]) == 800 and len(data["runs"]) == 3 and data["privacy"] is None
    assert (tmp_path / "pne_fed-pne_garland.png").read_bytes()[:4] == b"\x89PNG"
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temporary files


def test_dp_fed_pne_reports_the_guarantee(tmp_path, capsys):
    code = main(
        [
            "run",
            "dp-fed-pne",
            "--objective",
            "doublesine",
            "--clients",
            "4",
            "--horizon",
            "500",
            "--claim-epsilon",
            "2",
            "--delta",
            "1e-6",
            "--out",
            str(tmp_path),
            "--save-transcript",
            "--accountants",
            "exact,rdp,pld",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "event level" in out and "exact" in out
    data = json.loads((tmp_path / "pne_dp-fed-pne_doublesine_analytic.json").read_text())
    exact = [row for row in data["privacy"]["accounting"] if row["name"] == "exact"][0]
    assert exact["epsilon"] == pytest.approx(2.0, rel=1e-6)
    assert data["transcript"]["messages"]


def test_classic_calibration_warns_and_shows_the_true_delta(tmp_path, capsys):
    code = main(
        [
            "run",
            "dp-fed-pne",
            "--calibration",
            "classic",
            "--claim-epsilon",
            "10",
            "--delta",
            "1e-5",
            "--clients",
            "2",
            "--horizon",
            "200",
            "--out",
            str(tmp_path),
            "--accountants",
            "exact,rdp",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1  # VIOLATION: the classic sigma misses its claim at epsilon 10
    assert "does not give the claimed guarantee for large epsilon" in out
    assert "from about epsilon = 8.4" in out  # notes: first failing epsilon 8.42 at delta = 1e-5
    assert "true delta at epsilon=10: 2.26" in out and "VIOLATED" in out  # notes: 2.27e-5
    data = json.loads((tmp_path / "pne_dp-fed-pne_garland_classic.json").read_text())
    assert data["privacy"]["classic_check"]["violated"] is True


def test_hct_and_config_files(tmp_path, capsys):
    assert (
        main(
            [
                "run",
                "hct",
                "--config",
                str(CONFIGS / "pne_hct_garland.toml"),
                "--horizon",
                "300",
                "--runs",
                "2",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    data = json.loads((tmp_path / "pne_hct_garland.json").read_text())
    assert data["options"]["horizon"] == 300 and data["constants"]["rho"] == 0.75
    for name in ("pne_garland.toml", "pne_dp_garland.toml"):
        algorithm = "dp-fed-pne" if "dp" in name else "fed-pne"
        assert (
            main(
                [
                    "run",
                    algorithm,
                    "--config",
                    str(CONFIGS / name),
                    "--horizon",
                    "200",
                    "--runs",
                    "1",
                    "--out",
                    str(tmp_path),
                ]
            )
            == 0
        )


@pytest.mark.parametrize(
    "argv, field",
    [
        (["run", "fed-pne", "--horizon", "0"], "horizon"),
        (["run", "fed-pne", "--clients", "0"], "clients"),
        (["run", "dp-fed-pne", "--claim-epsilon", "0"], "epsilon"),
        (["run", "dp-fed-pne", "--claim-epsilon", "-1"], "epsilon"),
        (["run", "hct", "--objective", "rosenbrock"], "objective"),
        (["run", "dp-fed-pne", "--calibration", "moments"], "calibration"),
        (["run", "fed-pne", "--runs", "two"], "runs"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(argv, field, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err


def test_memory_estimate_covers_writing_the_result(tmp_path, capsys):
    """The size check's estimate per pull must cover what the whole command allocates per pull, writing the
    JSON result included (tracemalloc, the difference of two horizons, so imports and fixed costs cancel).
    It left the writing out: 144 bytes per pull estimated, 293 allocated, so a horizon the check let through
    could need twice the memory available."""
    import tracemalloc

    from reports.commands.run_pne import pne_bytes

    def peak(horizon: int) -> int:
        tracemalloc.start()
        try:
            out = str(tmp_path / str(horizon))
            assert main(["run", "fed-pne", "--clients", "1", "--horizon", str(horizon), "--out", out]) == 0
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = 20_000, 120_000  # 292 bytes per pull measured, as at 1e5 and 5e5
    peak(1000)  # imports and caches outside the measurement
    measured = (peak(large) - peak(small)) / (large - small)
    assert measured <= (pne_bytes(large, 1, 1) - pne_bytes(small, 1, 1)) / (large - small)
    capsys.readouterr()


def test_classic_calibration_at_a_tiny_epsilon_is_not_a_crash(tmp_path, capsys):
    # sigma = sqrt(2 ln(1.25/delta)) / 1e-300 = 4.8e300: the noise-aware constant c sqrt(1 + 4 sigma^2)
    # squared it and raised OverflowError (exit 4)
    argv = ["run", "dp-fed-pne", "--horizon", "30", "--calibration", "classic", "--claim-epsilon", "1e-300",
            "--accountants", "exact", "--out", str(tmp_path)]
    assert main(argv) == 0
    assert json.loads((tmp_path / "pne_dp-fed-pne_garland_classic.json").read_text())["privacy"]["noise_std"] > 1e300
    capsys.readouterr()
