"""The troubleshooting page quotes the error lines the commands print now.

Each case below makes one mistake a user makes, runs ``dpaudit`` in-process in a scratch directory, and checks
that the one line it prints on stderr (after ``dpaudit COMMAND: error: ``) is a message the page quotes (a quote
is a bold code span; ``...`` in a quote stands for any text). Every quote is either produced by a case or listed
in ``NOT_RUN`` with the reason, so a message that changes, or a quote nobody checks, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reports.cli import main
from tests.bad_input_files import GOOD_AUDIT

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "how-to" / "troubleshooting.md"
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")

FILES = {
    "tiny.toml": GOOD_AUDIT,
    "syntax.toml": GOOD_AUDIT.replace("steps = 1\n", "steps = 1 x\n"),
    "misspelt.toml": GOOD_AUDIT.replace("trials = 200", "trails = 200"),
    "noclaim.toml": re.sub(r"\[target\.claim\].*?unit = \"one record\"\n", "", GOOD_AUDIT, flags=re.S),
    "textepsilon.toml": GOOD_AUDIT.replace("epsilon = 1.0", 'epsilon = "one"'),
    "code.toml": 'probe = "gaussian"\ntrials = 200\nmechanism = "m:f"\n',
    "few.csv": "score,world\n1,0\n2,1\n",
    "header.csv": "score,wrld\n1,0\n2,1\n",
}
SMALL_RUN = ["run", "fts-de", "--preset", "synthetic", "--runs", "1", "--rounds", "2", "--out", "r"]
SMALL_ATTACK = ["attack", "gaussian", "--trials", "1e3", "--checkpoint", "ck", "--no-progress"]
# (id, commands run first, the mistake, whether the quote's numbers are this machine's)
CASES = [
    ("missing-file", [], ["audit", "nope.toml"], False),
    ("toml-syntax", [], ["audit", "syntax.toml"], False),
    ("misspelt-key", [], ["audit", "misspelt.toml"], False),
    ("key-outside-its-table", [], ["attack", "--config", "tiny.toml"], False),
    ("missing-claim", [], ["audit", "noclaim.toml"], False),
    ("wrong-type", [], ["audit", "textepsilon.toml"], False),
    ("flower-app-needs-allow-code", [], ["audit", "configs/audit_flower.toml", "--out", "out/f"], False),
    ("attack-config-needs-allow-code", [], ["attack", "--config", "code.toml"], False),
    ("non-numeric-option", [], ["estimate", "configs/estimate_example_multirun.csv", "--claim-epsilon", "abc"],
     False),
    ("rate-above-one", [], ["account", "--rate", "1.5", "--noise-multiplier", "1", "--steps", "10", "--delta",
                            "1e-5"], False),
    ("option-twice", [], ["audit", "tiny.toml", "--out", "out/t", "--out", "out/u"], False),
    ("size-beyond-memory", [], ["run", "hct", "--horizon", "1e12"], True),
    ("flower-claim-is-an-assumption", [], ["flower", "tests/flower_apps/digits_dp", "--claim", "4"], False),
    ("flower-not-a-directory", [], ["flower", "nodir"], False),
    ("scores-header", [], ["estimate", "header.csv", "--claim-epsilon", "1"], False),
    ("scores-too-few", [], ["estimate", "few.csv", "--claim-epsilon", "1"], False),
    ("run-would-overwrite", [SMALL_RUN], SMALL_RUN, False),
    ("checkpoint-of-another-attack", [SMALL_ATTACK + ["--seed", "1"]], SMALL_ATTACK + ["--seed", "2"], False),
    ("setup-file-missing", [], ["opacus-check", "--setup", "nofile.py:make"], False),
    ("setup-function-missing", [], ["opacus-check", "--setup", "configs/opacus_breast_cancer.py:nofunction"], False),
]
SLOW_CASES = [  # imports torch and opacus and builds the model
    ("opacus-refuses-batchnorm", [], ["opacus-check", "--setup",
                                      "tests/opacus_setup/user_digits_mlp.py:make_batchnorm_setup"], False),
]
NOT_RUN = {  # quotes not produced here, each with where it is checked or why not
    "out: OUT is in use by another audit": "needs a second audit running: tests/reports/test_audit_cli.py",
    "dpaudit audit: interrupted": "needs an interruption: tests/attacks/test_saved_work.py",
    "scheduler: cannot reach Dask scheduler": "waits 10 s for the scheduler: tests/test_readme_commands.py",
    "flower: flwr is not installed": "needs an environment without the flower extra",
    "raised ValueError: No activations detected": "opacus's own message, quoted from opacus 1.6",
    "data_loader: its BatchMemoryManager was given another optimizer": "tests/opacus_setup/test_user_setups.py",
}


def quotes() -> list[str]:
    """The error lines the page quotes (bold code spans), whitespace collapsed (the page wraps them)."""
    text = PAGE.read_text(encoding="utf-8")
    return [" ".join(q.split()) for q in re.findall(r"\*\*`(.+?)`\*\*", text, flags=re.S)]


def matches(quote: str, message: str, machine_numbers: bool = False) -> bool:
    """Whether ``message`` is what ``quote`` shows: from its start, ``...`` standing for any text."""
    if machine_numbers:
        quote, message = NUMBER.sub("#", quote), NUMBER.sub("#", message)
    pattern = ".*?".join(re.escape(part) for part in quote.split("..."))
    return re.match(pattern + ("" if quote.endswith("...") else r"\Z"), message) is not None


def _error_line(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    return code, (lines[-1] if lines else "")


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    (tmp_path / "tests").mkdir()
    for folder in ("flower_apps", "opacus_setup"):
        (tmp_path / "tests" / folder).symlink_to(ROOT / "tests" / folder)
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    return tmp_path


def _check(first, argv, machine_numbers, capsys):
    for earlier in first:
        assert main(earlier) == 0
    capsys.readouterr()
    code, line = _error_line(argv, capsys)
    assert code == 2, line
    message = re.sub(r"^dpaudit [a-z-]+: error: ", "", line)
    assert any(matches(q, message, machine_numbers) for q in quotes()), f"the page does not quote: {message}"


@pytest.mark.parametrize("first, argv, machine_numbers", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_page_quotes_what_the_command_prints(first, argv, machine_numbers, scratch, capsys):
    _check(first, argv, machine_numbers, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("first, argv, machine_numbers", [c[1:] for c in SLOW_CASES], ids=[c[0] for c in SLOW_CASES])
def test_the_page_quotes_opacus_refusals_as_printed(first, argv, machine_numbers, scratch, capsys):
    _check(first, argv, machine_numbers, capsys)


def test_every_quote_is_checked_or_says_why_not():
    assert len(quotes()) >= len(CASES)
    assert all(any(q.startswith(prefix) for q in quotes()) for prefix in NOT_RUN), "NOT_RUN lists a lost quote"
    assert len(quotes()) == len(CASES) + len(SLOW_CASES) + len(NOT_RUN), (
        "a quote on the page is neither produced by a case here nor listed in NOT_RUN")


def test_the_matching_reads_ellipses_and_masks_only_when_told():
    assert matches("target: unknown key; allowed here: a, b, ...", "target: unknown key; allowed here: a, b, c")
    assert not matches("target: unknown key", "target: unknown key; allowed here: a")
    assert not matches("needs 3.2 GiB", "needs 4.1 GiB") and matches("needs 3.2 GiB", "needs 4.1 GiB", True)
