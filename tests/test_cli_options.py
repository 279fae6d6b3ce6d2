"""Options given twice are refused (argparse alone keeps the last value silently), and a closed stdout ends
the command quietly with the shell's SIGPIPE code. One set of option names across commands: one spelling per
meaning (``--no-progress`` wherever progress shows, ``--claim-epsilon``, ``--delta``, ``--noise-multiplier``), no
accepted option silently ignored, and ``attack --list`` lists only what ``attack`` runs or marks the command that
runs the rest."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reports.cli import build_parser, main

PLAN = ["plan", "--trials", "1000", "--delta", "1e-5"]


@pytest.mark.parametrize("argv, given", [
    (PLAN + ["--trials", "2000"], "--trials"),
    (["plan", "--trials=1000", "--delta", "1e-5", "--trials=1000"], "--trials"),  # same value twice too
    (PLAN + ["--format", "json", "--format", "table"], "--format"),
    (["--debug", "--debug"] + PLAN, "--debug"),
    (["attack", "--config", "a.toml", "--config", "b.toml"], "--config"),
    (["account", "--rate", "0.1", "--noise-multiplier", "1", "--steps", "10", "--delta", "1e-5", "--rate", "1"],
     "--rate"),
    (["plan", "--claim-epsilon", "1", "--target-epsilon", "2", "--delta", "1e-5"], "--target-epsilon"),  # old + new
])
def test_an_option_given_twice_is_one_line_and_exit_2(capsys, argv, given):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert f"{given} given more than once" in err


def test_once_each_still_parses_and_the_repeatable_param_still_repeats():
    parser = build_parser()
    args = parser.parse_args(PLAN + ["--format", "json"])
    assert args.format == "json" and float(args.trials) == 1000
    args = parser.parse_args(["attack", "gaussian", "--param", "a=1", "--param", "b=2"])
    assert args.param == ["a=1", "b=2"]
    # the parser is reusable: a second parse does not remember the first one's options
    assert parser.parse_args(PLAN).delta is not None


def test_a_closed_stdout_exits_141_without_a_traceback_or_log(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    reader_gone = subprocess.Popen([sys.executable, "-m", "reports.cli", *PLAN, "--format", "json"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    reader_gone.stdout.close()  # like `| head -0`: the reader leaves before anything is written
    err = reader_gone.stderr.read().decode()
    assert reader_gone.wait(timeout=120) == 141, err
    assert err == ""
    assert not list(tmp_path.glob("dpaudit-error-*.log"))


@pytest.mark.parametrize("probe, key", [("gaussian", "calibration=classic"), ("gaussian", "epsilon=1"),
                                        ("bug-weak-noise", "epsilon=1")])
def test_a_gaussian_calibration_beside_an_explicit_noise_is_refused(capsys, probe, key):
    """``epsilon`` and ``calibration`` only choose a Gaussian probe's noise; beside ``noise_multiplier`` they
    were silently ignored (``--param calibration=classic --param noise_multiplier=2`` ran at z = 2)."""
    argv = ["attack", probe, "--trials", "1000", "--param", key, "--param", "noise_multiplier=2"]
    assert main(argv) == 2
    name = key.split("=")[0]
    assert f"params.{name}: calibrates the noise" in capsys.readouterr().err


# ----- one set of option names across commands (issue 41) -------------------------------------------------------

# commands that can print progress on stderr (bars, stage lines, slow-accountant notes, Flower's INFO log)
PROGRESS_COMMANDS = ("account", "calibrate", "attack", "audit", "flower", "opacus-check")
# spellings retired for the one spelling every command uses; the hidden ones still parse (README's commands)
RETIRED = {"--quiet": "--no-progress", "--claimed-epsilon": "--claim-epsilon", "--dp-delta": "--delta",
           "--output": "--out", "--random-seed": "--seed", "--num-workers": "--workers", "--json": "--format"}
HIDDEN_ALIASES = [("audit", ["--quiet"], "no_progress", True),
                  ("flower", ["app", "--claimed-epsilon", "7"], "claim_epsilon", 7.0),
                  ("opacus-check", ["--setup", "x.py", "--claimed-epsilon", "3"], "claim_epsilon", 3.0),
                  ("account", ["--rate", "0.1", "--noise", "2", "--steps", "3", "--delta", "1e-5"], "noise_multiplier",
                   2.0)]
# a dest spelled otherwise than ``--dest-with-dashes``, on purpose
SPELLED_OTHERWISE = {"train_argv": "--argv", "dp_delta": "--delta",
                     "epsilon": "--claim-epsilon"}  # run dp-fed-pne: the config key epsilon


def _subcommands(parser, prefix=()):
    """``(command words, parser)`` of every leaf sub-command (``run ALGORITHM`` included)."""
    import argparse

    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix, parser
    for sub in subs:
        for name, child in sub.choices.items():
            yield from _subcommands(child, (*prefix, name))


def _visible_options(parser):
    import argparse

    return [a for a in parser._actions if a.option_strings and a.help is not argparse.SUPPRESS and a.dest != "help"]


COMMANDS = [(words, p) for words, p in _subcommands(build_parser()) if words]


@pytest.mark.parametrize("words", [w for w, _ in COMMANDS if w[0] in PROGRESS_COMMANDS or w[0] == "run"],
                         ids=" ".join)
def test_every_command_that_prints_progress_takes_no_progress(words):
    parser = dict(COMMANDS)[words]
    [action] = [a for a in _visible_options(parser) if "--no-progress" in a.option_strings]
    assert action.option_strings == ["--no-progress"] and action.dest == "no_progress"


def test_one_meaning_one_spelling_across_commands():
    """Each option (its dest) is spelled the same in every command, as its dest says; no retired spelling shows."""
    spellings = {}
    for words, parser in COMMANDS:
        for action in _visible_options(parser):
            longs = tuple(s for s in action.option_strings if s.startswith("--"))
            spellings.setdefault(action.dest, {}).setdefault(longs, []).append(" ".join(words))
            for spelling in longs:
                assert spelling not in RETIRED, f"{' '.join(words)} shows {spelling}; spell it {RETIRED[spelling]}"
    for dest, found in spellings.items():
        assert len(found) == 1, f"{dest} is spelled {sorted(found)} in {found}"
        [longs] = found
        assert longs == (SPELLED_OTHERWISE.get(dest, "--" + dest.replace("_", "-")),), (dest, longs)
    # account's noise multiplier is --noise-multiplier, as run's private algorithms spell it (their --noise is a kind)
    account = dict(COMMANDS)[("account",)]
    assert not any("--noise" in a.option_strings for a in _visible_options(account))
    # where the probe batches run: attack takes every executor audit takes (auto included)
    executors = {words: next(a.choices for a in _visible_options(p) if a.dest == "executor")
                 for words, p in COMMANDS if any(a.dest == "executor" for a in _visible_options(p))}
    assert len(executors) == 2 and len({tuple(sorted(c)) for c in executors.values()}) == 1, executors


@pytest.mark.parametrize("command, argv, dest, value", HIDDEN_ALIASES, ids=[h[0] for h in HIDDEN_ALIASES])
def test_a_retired_spelling_of_the_readme_still_parses_but_is_not_shown(command, argv, dest, value):
    assert getattr(build_parser().parse_args([command, *argv]), dest) == value
    alias = next(a for a in argv if a in RETIRED or a == "--noise")
    assert not re.search(re.escape(alias) + r"(?![\w-])", dict(COMMANDS)[(command,)].format_help())


def test_an_undocumented_retired_spelling_is_refused(capsys):
    assert main(["run", "dp-duets", "--dp-delta", "1e-6"]) == 2
    assert build_parser().parse_args(["run", "dp-duets", "--delta", "1e-6"]).dp_delta == "1e-6"


def test_audit_no_progress_leaves_stderr_empty(tmp_path, capsys):
    config = Path(__file__).resolve().parents[1] / "configs" / "audit_small.toml"
    assert main(["audit", str(config), "--out", str(tmp_path / "a"), "--no-progress"]) in (0, 1, 3)
    quiet = capsys.readouterr()
    assert quiet.err == "" and "overall:" in quiet.out
    assert main(["audit", str(config), "--out", str(tmp_path / "b")]) in (0, 1, 3)
    assert "plan (before any work):" in capsys.readouterr().err  # progress without it


@pytest.mark.parametrize("argv", [["account", "--rate", "0.1", "--noise-multiplier", "1", "--steps", "3", "--delta",
                                   "1e-5", "--accountants", "rdp"],
                                  ["calibrate", "--claim-epsilon", "1", "--delta", "1e-5", "--rate", "0.1", "--steps",
                                   "3", "--accountant", "rdp"]], ids=["account", "calibrate"])
def test_no_progress_silences_the_slow_accountant_notes(argv, capsys, monkeypatch):
    monkeypatch.setattr("accounting.cost.estimate_seconds", lambda name, composition: (1e6, "said slow"))
    monkeypatch.setattr("accounting.registry.estimate_seconds", lambda name, composition: (1e6, "said slow"))
    assert main(argv) == 0
    assert "said slow" in capsys.readouterr().err
    assert main([*argv, "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_opacus_check_no_progress_silences_its_stage_lines(capsys, monkeypatch):
    from accounting.errors import ConfigurationError

    def stop(*args, **kwargs):
        raise ConfigurationError("setup", "stopped by the test")

    monkeypatch.setattr("attacks.opacus_checks.check.check_opacus_setup", stop)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["opacus-check", "--setup", "x.py:make_setup"]) == 2
    assert "dpaudit opacus-check: building the set-up x.py:make_setup" in capsys.readouterr().err
    assert main(["opacus-check", "--setup", "x.py:make_setup", "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == "dpaudit opacus-check: error: setup: stopped by the test"


def test_flower_no_progress_leaves_out_flowers_info_log(capfd):
    pytest.importorskip("flwr")
    app = Path(__file__).resolve().parent / "flower_apps" / "local_dp"
    assert main(["flower", str(app), "--num-supernodes", "2", "--run-config", "num-server-rounds=1 clients-per-round=2",
                 "--no-progress"]) == 0
    err = capfd.readouterr().err
    assert "INFO" not in err and "[ROUND" not in err
    # Flower's warnings still show while a quiet run runs (asserting on a warning Flower itself prints failed when an
    # earlier Flower run in the same process had already printed its once-only warnings)
    import logging

    from dpfed.flower.quiet import LOGGER, flower_log_level

    logger = logging.getLogger(LOGGER)
    with flower_log_level(True):
        assert logger.isEnabledFor(logging.WARNING) and not logger.isEnabledFor(logging.INFO)


@pytest.mark.parametrize("argv, words", [
    (["opacus-check", "--setup", "x.py", "--seed", "1"], "seed: applies to --train only"),
    (["opacus-check", "--setup", "x.py", "--confidence", "0.9"], "confidence: applies to --train only"),
    (["opacus-check", "--train", "x.py", "--repetitions", "4"], "repetitions: applies to --setup only"),
    (["opacus-check", "--train", "x.py", "--seed", "4"], "seed: applies to the canaries only"),
    (["flower", "tests/flower_apps/digits_dp", "--seed", "4"], "seed: seeds the canaries only"),
])
def test_an_option_that_would_be_ignored_is_refused(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and words in err


# ----- attack --list and attack agree ------------------------------------------------------------------------------

def _listed():
    from reports.commands.attack import list_rows

    return {row[0]: row[2] for row in list_rows()}


def test_every_listed_probe_is_run_by_attack_or_marked_and_refused_naming_its_command(capsys):
    """``attack --list`` lists what ``attack`` runs; a probe another command runs is marked with that command and
    refused by ``attack`` (and ``plan --probe``) in one line, exit 2, naming it."""
    from attacks.probes import probe_class
    from reports.commands.attack import _settings, build_probe

    parser = build_parser()
    for name, what in _listed().items():
        cls = probe_class(name)
        marked = re.match(r"ONE RUN, not run by attack: use `([^`]+)`", what)
        if marked:
            assert cls.one_run and cls.run_by == marked.group(1), name
            for argv in (["attack", name], ["plan", "--trials", "100", "--delta", "1e-5", "--probe", name]):
                assert main(argv) == 2, argv
                err = capsys.readouterr().err.strip()
                assert "\n" not in err and f"`{marked.group(1)}`" in err, err
            continue
        assert not cls.run_by, name
        assert what.startswith("ONE RUN (--trials: its canaries") == bool(cls.one_run), name
        if name == "user":  # the user probe needs a mechanism: attack asks for it by name
            assert main(["attack", name]) == 2
            assert "mechanism" in capsys.readouterr().err
            continue
        assert build_probe(_settings(parser.parse_args(["attack", name]))).one_run == cls.one_run, name


def test_attack_runs_a_listed_one_run_probe(capsys):
    one_run = [name for name, what in _listed().items() if what.startswith("ONE RUN (--trials")]
    assert one_run == ["dpsgd-one-run"]
    for name in one_run:
        assert main(["attack", name, "--trials", "400", "--seed", "1", "--claim-epsilon", "0.01"]) == 1  # VIOLATION
        out = capsys.readouterr().out
        assert "400 in one run" in out and "verdict     VIOLATION" in out
        assert main(["attack", name, "--trials", "400", "--seed", "1", "--format", "json"]) in (0, 3)
        result = json.loads(capsys.readouterr().out)
        assert result["one_run"] and result["canaries"] == 400 and result["verdict"]["status"] in ("PASS",
                                                                                                    "INCONCLUSIVE")


@pytest.mark.parametrize("extra", [["--executor", "processes"], ["--workers", "2"], ["--batch-size", "100"],
                                   ["--methods", "clopper-pearson"], ["--backend", "torch"], ["--checkpoint", "c"],
                                   ["--delta", "1e-5", "--claim-delta", "1e-6"]])
def test_attack_refuses_for_a_one_run_probe_what_only_two_worlds_use(extra, capsys):
    assert main(["attack", "dpsgd-one-run", "--trials", "400", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "one-run probe" in err, err


def test_a_one_run_too_large_for_memory_is_refused_before_it_runs(capsys):
    for argv in (["attack", "dpsgd-one-run", "--trials", "1e7"],
                 ["plan", "--trials", "1e7", "--delta", "1e-5", "--probe", "dpsgd-one-run"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "GiB of memory" in err and "at most about" in err, err


# ----- one vocabulary: a shared concept has one spelling in every command ----------------------------------------

# concept -> (its one option, how to recognise the concept in any option: its dest or its help text)
CONCEPTS = {
    "the claimed epsilon (tested, or the noise calibrated to it)": (
        "--claim-epsilon", lambda a: a.dest in ("claim_epsilon", "target_epsilon")
        or re.search(r"epsilon (to claim|the user states)|claimed epsilon|claim to certify against:", a.help or "")),
    "progress on stderr": ("--no-progress", lambda a: a.dest == "no_progress" or re.search(r"^no progress",
                                                                                           a.help or "")),
    "worker processes": ("--workers", lambda a: re.search(r"^worker processes\b", a.help or "")),
    "a run's federated clients": ("--clients", lambda a: re.search(r"\b(federated )?clients\b.*\b(m|M)\b",
                                                                    a.help or "")),
    "where the probe batches run": ("--executor", lambda a: re.search(r"where (probe )?batches run", a.help or "")),
    "the noise test's false-alarm level": ("--false-alarm", lambda a: re.search(r"flags a correct", a.help or "")),
    "the unit of privacy": ("--unit", lambda a: a.dest == "unit"),
    "flower's accounting assumptions": ("--assumptions", lambda a: re.search(r"assumptions to check", a.help or "")),
}
# old spellings still read (hidden, one warning line each): (command words, argv with the old one, dest, value)
OLD_SPELLINGS = [
    (("calibrate",), ["--epsilon", "1", "--delta", "1e-5", "--check-classic"], "claim_epsilon", 1.0),
    (("plan",), ["--target-epsilon", "2", "--delta", "1e-5"], "claim_epsilon", 2.0),
    (("run", "dp-fed-pne"), ["--epsilon", "3"], "epsilon", "3"),
    (("run", "dp-fkm"), ["--epsilon", "2"], "claim_epsilon", 2.0),
    (("run", "fedzero"), ["--workers", "5"], "clients", 5),
    (("run", "dp-fedzero"), ["--workers", "5"], "clients", 5),
    (("flower",), ["app", "--claim", "poisson"], "assumptions", "poisson"),
    (("flower",), ["app", "--transcript-alpha", "0.01"], "false_alarm", 0.01),
    (("flower",), ["app", "--claimed-epsilon", "7"], "claim_epsilon", 7.0),
    (("opacus-check",), ["--setup", "x.py", "--claimed-epsilon", "3"], "claim_epsilon", 3.0),
    (("audit",), ["--quiet"], "no_progress", True),
    (("account",), ["--rate", "0.1", "--noise", "2", "--steps", "3", "--delta", "1e-5"], "noise_multiplier", 2.0),
]


def _all_parsers(parser):
    import argparse

    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _all_parsers(child)


def test_every_shared_concept_has_one_spelling_in_every_command():
    """Walks every command's parser: an option that carries one of ``CONCEPTS`` (by its dest or its help) is spelled
    as the concept's one option, and no old spelling shows in any --help."""
    found = {concept: set() for concept in CONCEPTS}
    for words, parser in COMMANDS:
        for action in _visible_options(parser):
            longs = [s for s in action.option_strings if s.startswith("--")]
            for concept, (option, carries) in CONCEPTS.items():
                if carries(action):
                    assert longs == [option], f"{' '.join(words)} spells {concept!r} {longs}, not {option}"
                    found[concept].add(" ".join(words))
        shown = parser.format_help()
        for old_words, argv, _, _ in OLD_SPELLINGS:
            old = next(a for a in argv if a.startswith("--") and a not in ("--delta", "--setup", "--check-classic",
                                                                             "--rate", "--steps"))
            if words == old_words:  # (--workers is worker processes elsewhere, --noise a kind of noise in `run`)
                assert not re.search(re.escape(old) + r"(?![\w-])", shown), (words, old)
    # every concept is found where it is expected (the recognisers above are not vacuous)
    assert {"attack", "estimate", "plan", "flower", "opacus-check", "calibrate", "run dp-fkm"} <= \
        found["the claimed epsilon (tested, or the noise calibrated to it)"]
    assert found["where the probe batches run"] == {"attack", "audit"}
    assert {"attack", "audit"} <= found["worker processes"]
    assert {"run fedzero", "run dp-fedzero"} <= found["a run's federated clients"]
    assert found["the noise test's false-alarm level"] == {"flower", "opacus-check"}
    assert found["flower's accounting assumptions"] == {"flower"}


def test_every_command_takes_no_progress():
    for words, parser in COMMANDS:
        assert any(a.option_strings == ["--no-progress"] for a in _visible_options(parser)), words


def test_shared_options_have_one_default_and_one_kind():
    """--executor: same choices and default; --unit: always a choice; --workers: always processes; --out: an output
    directory in every command (metavar DIR; flower, opacus-check and report once took --out FILE, issue 47)."""
    from reports.commands.attack import DEFAULTS  # attack's defaults apply after its --config file's values

    executors, outs = {}, []
    for words, parser in COMMANDS:
        for action in _visible_options(parser):
            if action.dest == "executor":
                executors[words] = (tuple(action.choices), action.default or DEFAULTS["executor"])
            if action.dest == "unit":
                assert action.choices, f"{' '.join(words)} --unit takes free text"
            if action.dest == "workers":
                assert "process" in action.help, words
            if action.dest == "out":
                assert action.metavar == "DIR", f"{' '.join(words)} --out {action.metavar}: --out names a directory"
                assert action.help.startswith("output directory"), (words, action.help)
                outs.append(words[0])
    assert len(set(executors.values())) == 1 and next(iter(executors.values()))[1] == "auto", executors
    assert {"audit", "estimate", "run", "flower", "opacus-check", "report"} <= set(outs), outs


def test_no_parser_takes_abbreviations(capsys):
    for parser in _all_parsers(build_parser()):
        assert parser.allow_abbrev is False, parser.prog
    assert main(["estimate", "x.csv", "--claim", "1"]) == 2  # not --claim-epsilon
    assert "unrecognized arguments: --claim 1" in capsys.readouterr().err
    assert main(["plan", "--trials", "1000", "--delta", "1e-5", "--tri", "5"]) == 2
    assert "unrecognized arguments: --tri" in capsys.readouterr().err


def test_version_and_a_bare_dpaudit_name_the_commands_as_typed(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"dpaudit {version('dpfed-audit')}"
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "opacus-check" in err and "opacus_check" not in err


@pytest.mark.parametrize("words, argv, dest, value", OLD_SPELLINGS, ids=lambda x: x if isinstance(x, str) else None)
def test_an_old_spelling_works_and_warns_once(words, argv, dest, value, capsys, monkeypatch):
    monkeypatch.setattr("accounting.vocabulary._warned", set())
    assert getattr(build_parser().parse_args([*words, *argv]), dest) == value
    from accounting.vocabulary import flush_old_spellings, warn_old_spelling

    flush_old_spellings(show=False)
    old = next(a for a in argv if a.startswith("--") and a not in ("--setup", "--delta", "--check-classic", "--rate",
                                                                     "--steps"))
    warn_old_spelling(old, "x")
    warn_old_spelling(old, "x")
    assert capsys.readouterr().err.count(f"{old} is deprecated") == 1


def test_an_old_spelling_warns_in_one_line_once_the_command_has_run(capsys, monkeypatch):
    monkeypatch.setattr("accounting.vocabulary._warned", set())
    assert main(["calibrate", "--check-classic", "--epsilon", "1", "--delta", "1e-5", "--format", "json"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["dpaudit: warning: --epsilon is deprecated; use --claim-epsilon (it works the same)"]
    assert main(["calibrate", "--check-classic", "--epsilon", "1", "--delta", "1e-5", "--format", "json"]) == 0
    assert capsys.readouterr().err == ""  # once per process
    # a usage error stays the only line: no warning before it
    monkeypatch.setattr("accounting.vocabulary._warned", set())
    assert main(["calibrate", "--epsilon", "1"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    # the same numbers either way
    assert main(["calibrate", "--check-classic", "--claim-epsilon", "1", "--delta", "1e-5", "--format", "json"]) == 0
    new = capsys.readouterr().out
    assert main(["calibrate", "--check-classic", "--epsilon", "1", "--delta", "1e-5", "--format", "json"]) == 0
    assert capsys.readouterr().out == new


def test_an_old_opacus_setup_key_is_read_with_a_warning(capsys, monkeypatch):
    from attacks.opacus_checks.load import _with_todays_keys

    monkeypatch.setattr("accounting.vocabulary._warned", set())
    assert _with_todays_keys({"claimed_epsilon": 2.0, "epochs": 1}) == {"claim_epsilon": 2.0, "epochs": 1}
    assert "'claimed_epsilon' is deprecated; use 'claim_epsilon'" in capsys.readouterr().err
    from accounting.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="give 'claim_epsilon' only"):
        _with_todays_keys({"claimed_epsilon": 2.0, "claim_epsilon": 2.0})


def test_flower_assumptions_are_not_a_claimed_epsilon(capsys):
    assert main(["flower", "tests/flower_apps/digits_dp", "--assumptions", "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "unknown assumption '4'" in err and "--claim-epsilon" in err
