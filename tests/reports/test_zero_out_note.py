"""The neighbouring relation is stated where a user reads a claim: an add/remove claim is the zero-out
relation (a slot in a declared population that contributes zero when absent), with why the accountants'
add/remove figures hold for it; in `dpaudit account` (text and JSON), the report's claim sentence (Markdown
and HTML) and the README."""

from __future__ import annotations

import json
from pathlib import Path

from accounting.mechanisms import Neighbouring
from accounting.zero_out import ZERO_OUT_NOTE, relation_note
from reports.cli import main
from reports.model import claim_in_words

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "account --rate 0.35 --noise 1 --steps 60 --delta 0.024624 --accountants rdp".split()


def test_the_note_names_the_relation_and_why_the_figures_hold():
    for words in ("zero-out", "declared", "contributes zero", "one clipped record", "add/remove figures hold"):
        assert words in ZERO_OUT_NOTE
    assert relation_note(Neighbouring.ADD_REMOVE) == relation_note("add_remove") == ZERO_OUT_NOTE
    assert relation_note(Neighbouring.REPLACE_ONE) is None and relation_note("replace-one") is None


def test_account_prints_the_relation_for_add_remove_only(capsys):
    assert main(ACCOUNT) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "neighbours: add-remove here is the zero-out relation" in text and "add/remove figures hold" in text
    assert main([*ACCOUNT, "--neighbouring", "replace-one"]) == 0
    assert "zero-out" not in capsys.readouterr().out
    assert main([*ACCOUNT, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["neighbouring_note"] == ZERO_OUT_NOTE


def test_the_report_claim_sentence_states_the_relation():
    claim = {"epsilon": 2.0, "delta": 1e-5, "neighbouring": "add-remove", "unit": "one agent"}
    assert claim_in_words(claim).endswith(f"Neighbours: {ZERO_OUT_NOTE}.")
    assert "zero-out" not in claim_in_words(claim | {"neighbouring": "replace-one"})


def test_the_documentation_states_the_relation():
    page = (ROOT / "docs" / "explanation" / "neighbouring.md").read_text(encoding="utf-8")
    assert "## The neighbouring relation" in page
    page = " ".join(page.split())
    assert "is the **zero-out** relation" in page and "accounting/zero_out.py" in page
