"""`dpaudit account` and `dpaudit calibrate`: output shapes, exit codes, one-line errors."""

import json
import math

import pytest

from reports.cli import main


def test_account_json(capsys):
    argv = "--rate 0.35 --noise 1 --steps 60 --delta 0.024624 --accountants moments,pld,exact --format json"
    assert main(["account", *argv.split()]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["name"]: r for r in out["accountants"]}
    assert set(rows) == {"moments", "pld", "exact"}
    assert all({"name", "epsilon", "delta", "status"} <= set(r) for r in rows.values())
    assert round(rows["moments"]["epsilon"], 2) == 15.17
    assert rows["exact"]["status"] == "unsupported" and rows["exact"]["epsilon"] is None


def test_account_table(capsys):
    assert (
        main(
            [
                "account",
                "--rate",
                "0.1",
                "--noise",
                "1",
                "--steps",
                "60",
                "--delta",
                "1e-5",
                "--neighbouring",
                "replace-one",
                "--accountants",
                "rdp,pld,prv",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "replace-one" in out and "unsupported" in out  # prv has no replace-one analysis


@pytest.mark.parametrize(
    "argv, field",
    [
        (["--rate", "0", "--noise", "1", "--steps", "5", "--delta", "1e-5"], "rate"),
        (["--rate", "1.2", "--noise", "1", "--steps", "5", "--delta", "1e-5"], "rate"),
        (["--rate", "0.1", "--noise", "-1", "--steps", "5", "--delta", "1e-5"], "noise"),
        (["--rate", "0.1", "--noise", "1", "--steps", "0", "--delta", "1e-5"], "steps"),
        (["--rate", "0.1", "--noise", "1", "--steps", "5", "--delta", "1"], "delta"),
        (["--rate", "0.1", "--noise", "ten", "--steps", "5", "--delta", "1e-5"], "noise"),
        (["--rate", "0.1", "--noise", "1", "--steps", "5", "--delta", "1e-5", "--accountants", "magic"], "accountants"),
        # Poisson sampling has no batch: the population was accepted and silently ignored
        (["--rate", "0.1", "--noise", "1", "--steps", "5", "--delta", "1e-5", "--population", "10"], "population"),
    ],
)
def test_bad_input_one_line_exit_2(argv, field, capsys):
    assert main(["account", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err


def test_calibrate_commands(capsys):
    assert main(["calibrate", "--check-classic", "--claim-epsilon", "10", "--delta", "1e-5"]) == 1  # VIOLATION
    out = capsys.readouterr().out
    assert "VIOLATION" in out and "2.26" in out
    assert main(["calibrate", "--check-classic", "--claim-epsilon", "1", "--delta", "1e-5", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["violated"] is False
    assert (
        main(
            [
                "calibrate",
                "--claim-epsilon",
                "2",
                "--delta",
                "1e-5",
                "--rate",
                "0.1",
                "--steps",
                "50",
                "--accountant",
                "rdp",
                "--format",
                "json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["achieved_epsilon"] <= 2
    assert main(["calibrate", "--claim-epsilon", "2", "--delta", "1e-5"]) == 2
    assert "rate" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra", [["--rate", "0.1"], ["--steps", "10"], ["--accountant", "rdp"], ["--neighbouring", "replace-one"]]
)
def test_check_classic_refuses_flags_it_would_ignore(extra, capsys):
    assert main(["calibrate", "--check-classic", "--claim-epsilon", "1", "--delta", "1e-5", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and extra[0] in err


def test_every_account_and_calibrate_flag_has_help():
    import argparse

    from reports import cli

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name in ("account", "calibrate"):
        for action in sub.choices[name]._actions:
            assert action.help, (name, action.option_strings)


def test_the_delta_is_echoed_as_given(capsys):
    # it was printed to 4 significant digits: --delta 0.9999999 read "delta = 1" (an invalid delta), and
    # the landmine configuration's 0.024624 read 0.02462
    for delta in ("0.9999999", "0.024624"):
        assert main(["account", "--rate", "0.1", "--noise", "1", "--steps", "5", "--delta", delta,
                     "--accountants", "rdp"]) == 0
        assert f"delta = {delta}\n" in capsys.readouterr().out
    assert main(["calibrate", "--check-classic", "--claim-epsilon", "0.5", "--delta", "0.9999999999"]) == 0
    assert "(claimed 0.9999999999)" in capsys.readouterr().out


def test_calibrate_prints_extreme_noise_in_scientific_notation(capsys):
    # '{:.4f}' printed the classic sigma of (1e-300, 1e-300), 3.7e301, as 302 digits (and 0.0010 for 9.998e-4)
    assert main(["calibrate", "--check-classic", "--claim-epsilon", "1e-300", "--delta", "1e-300"]) == 0
    out = capsys.readouterr().out
    classic = math.sqrt(2 * math.log(1.25e300)) / 1e-300
    assert f"= {classic:.3e}" in out and max(len(line) for line in out.splitlines()) < 200
