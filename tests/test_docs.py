"""The documentation (mkdocs.yml, docs/) builds in strict mode, and its reference pages are generated from the code.

The build itself is the check for broken links, missing anchors and pages left out of the nav (strict mode turns
each warning into a failure). The generated pages are checked against what ``dpaudit`` does: every command's help
text, the keys the strict configuration reader accepts, the exit codes, the probes ``attack --list`` lists.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reports import reference_pages

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 150


def test_the_docs_build_in_strict_mode(tmp_path):
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                            str(tmp_path / "site")],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    assert "WARNING" not in build.stderr, build.stderr[-3000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "dpaudit opacus-check" in cli and "--train" in cli  # the generated pages were built


def test_the_build_takes_the_generated_pages_from_the_code():
    """The MkDocs hook adds exactly ``generated_pages()`` (a changed help text changes its page at the next build)."""
    from mkdocs.config import load_config
    from mkdocs.structure.files import Files

    config = load_config(str(ROOT / "mkdocs.yml"))
    config.plugins._current_plugin = "hook"  # what MkDocs sets while it runs a hook (File.generated reads it)
    files = reference_pages.on_files(Files([]), config)
    built = {f.src_uri: f.content_string for f in files}
    assert built == reference_pages.generated_pages()


def test_every_command_help_is_on_the_cli_page_verbatim(monkeypatch):
    from reports.cli import build_parser

    parser = build_parser()
    page = reference_pages.cli_page(parser)
    monkeypatch.setenv("COLUMNS", reference_pages.HELP_COLUMNS)
    parsers = reference_pages.command_parsers(parser)
    assert {prog for prog, _ in parsers} >= {"dpaudit audit", "dpaudit flower", "dpaudit run dp-fts-de"}
    for prog, sub in parsers:
        assert f"## `{prog}`" in page and sub.format_help().rstrip() in page, prog


def test_a_changed_help_text_changes_its_page():
    from reports.cli import build_parser

    parser = build_parser()
    before = reference_pages.cli_page(parser)
    plan = dict(reference_pages.command_parsers(parser))["dpaudit plan"]
    option = next(a for a in plan._actions if "--delta" in a.option_strings)
    option.help = "a help text written by this test"
    after = reference_pages.cli_page(parser)
    assert after != before and "a help text written by this test" in after


def _unknown_key_message(algorithm: str) -> str:
    """The strict reader's message for an unknown parameter of ``algorithm``: it lists the keys allowed there."""
    from accounting.errors import ConfigurationError
    from reports.audit.config import parse_config
    from reports.audit.targets import build_target

    text = (f'[[target]]\nalgorithm = "{algorithm}"\n[target.parameters]\nno_such_key = 1\n'
            '[target.claim]\nepsilon = 1.0\ndelta = 1e-5\nneighbouring = "add-remove"\nunit = "one record"\n')
    with pytest.raises(ConfigurationError) as raised:
        for spec in parse_config(text, allow_code=True)["targets"]:
            build_target(spec)
    return str(raised.value)


@pytest.mark.parametrize("algorithm", ["dp-fts-de", "dp-fed-pne", "mechanism", "dp-duets", "dp-fedzero", "fkm",
                                       "flower-app", "dp-sgd"])
def test_the_configuration_page_lists_the_keys_the_reader_accepts(algorithm):
    from reports.audit import targets

    targets._load_builtin_targets()
    keys = sorted(targets.TARGETS[algorithm].parameter_schema())
    message = _unknown_key_message(algorithm)
    assert f"allowed here: {', '.join(keys)}" in message, message
    page = reference_pages.configuration_page()
    sections = page.split("\n### `algorithm =` ")[1:]
    section = next(s for s in sections if f"`{algorithm}`" in s.split("\n", 1)[0])
    listed = sorted(line.split("`")[1] for line in section.splitlines() if line.startswith("| `"))
    assert listed == keys


def test_the_exit_code_page_has_every_code():
    from reports.exit_codes import ExitCode

    page = reference_pages.exit_codes_page()
    assert all(f"| {int(code)} | `{code.name}` |" in page for code in ExitCode)


def test_the_probe_page_lists_what_attack_list_prints(capsys):
    from reports.cli import main

    assert main(["attack", "--list"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()[2:] if line.strip()]
    page = reference_pages.probes_page()
    assert len(names) > 20 and all(f"| `{name}` |" in page for name in names)


def test_the_report_schema_page_has_every_definition():
    import json

    schema = json.loads((ROOT / "reports" / "schema" / "report.schema.json").read_text(encoding="utf-8"))
    page = reference_pages.report_schema_page()
    assert all(f"### `{name}`" in page for name in schema["$defs"])


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES}: the rest is in docs/)"


def test_the_pages_hold_no_hand_written_reference():
    """docs/reference/ holds only its index: every other reference page is generated."""
    written = {p.name for p in (ROOT / "docs" / "reference").iterdir()}
    assert written == {"index.md"}
    assert not any(os.path.exists(ROOT / "docs" / path) for path in reference_pages.PAGES)
