"""Every output block the documentation shows is what its command prints now (``tests/docs_outputs.py``).

The shown commands are seeded (the estimate example's bootstrap and random half, the opacus check's noise
measurement, the audit's probe), so their figures repeat and are compared as printed (no false failure from
randomness: two runs here gave the same bytes; another NumPy or torch build could move a last digit, which then
shows as a difference to look at); a block whose figures are random states its ``tolerance``. A failure lists the
lines that differ; ``python -m tests.docs_outputs --update`` rewrites the blocks after a deliberate change.
"""

from __future__ import annotations

import pytest

from tests import docs_outputs
from tests.docs_outputs import differences, select, shown_blocks, unmarked_output_blocks

BLOCKS = [block for page in docs_outputs.pages() for block in shown_blocks(page)]
# pages whose output blocks are the standard output of the Python example just above each, run and compared by
# their own test (not a dpaudit command, so no marker)
CHECKED_BY_ANOTHER_TEST = {"docs/how-to/use-as-a-library.md": "tests/test_library_examples.py"}


def test_the_pages_show_their_output_blocks_with_the_command_they_come_from():
    assert len(BLOCKS) >= 3, "the shown-output markers were not found"
    assert {b.page.name for b in BLOCKS} >= {"own-scores.md", "check-an-opacus-setup.md", "read-a-violation.md"}
    unmarked = [where for page in docs_outputs.pages() for where in unmarked_output_blocks(page)
                if where.split(":")[0] not in CHECKED_BY_ANOTHER_TEST]
    assert not unmarked, f"output blocks without an '<!-- output of: dpaudit ... -->' marker: {unmarked}"


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.where)
def test_a_shown_output_block_is_what_its_command_prints(block, tmp_path):
    produced = docs_outputs.produce(block, docs_outputs.scratch_directory(tmp_path))
    problems = differences(block.shown, produced, block.tolerance)
    assert not problems, (f"{block.where} shows what `{block.command}` no longer prints "
                          "(python -m tests.docs_outputs --update rewrites it):\n" + "\n".join(problems))


def test_a_changed_figure_or_word_is_a_difference():
    produced = "verdict  VIOLATION (ceiling 5.473): epsilon >= 4.446\n"
    assert differences(produced, produced) == []
    assert differences("verdict  VIOLATION (ceiling 6.295): epsilon >= 4.446\n", produced)
    assert differences("verdict  PASS (ceiling 5.473): epsilon >= 4.446\n", produced)
    assert differences("verdict  VIOLATION (ceiling 5.473): epsilon >= 4.446\nmore\n", produced)
    assert differences("verdict  VIOLATION (ceiling 5.47): epsilon >= 4.446\n", produced)  # as printed


def test_a_stated_tolerance_admits_random_figures_within_it_only():
    produced = "bound 4.446 from 2000 trials\n"
    assert differences("bound 4.5 from 2000 trials\n", produced, tolerance=0.02) == []
    assert differences("bound 4.6 from 2000 trials\n", produced, tolerance=0.02)
    assert differences("bound 4.5 from 2001 trials\n", produced, tolerance=0.0)


def test_spaces_temporary_paths_and_durations_are_masked():
    produced = "wrote /tmp/pytest-7/work/out/report.json in 12.5 s   \n"
    assert differences("wrote /tmp/x/out/report.json in 3 s\n", produced) == []


def test_the_selection_options_cut_wrap_and_start_where_told():
    output = "progress\nverdict a long line of words here\nnext\n"
    assert select(output, [("from", "verdict"), ("lines", "1")]) == "verdict a long line of words here\n"
    assert select(output, [("from", "verdict"), ("lines", "1"), ("cut", "20")]) == "verdict a long ...\n"
    assert select(output, [("from", "next"), ("wrap", "3")]) == "next\n"
    assert select("a b c d e\n", [("wrap", "3")]) == "a b\nc d\ne\n"
    with pytest.raises(ValueError):
        select(output, [("from", "absent")])


def test_update_rewrites_a_drifted_block_and_leaves_the_rest(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("intro\n\n<!-- output of: dpaudit plan --x | lines 1 -->\n```text\nold 1\n```\n\nend\n")
    monkeypatch.setattr(docs_outputs, "ROOT", tmp_path)
    monkeypatch.setattr(docs_outputs, "scratch_directory", lambda where: where)
    monkeypatch.setattr(docs_outputs, "run_command", lambda command, work: (0, "new 2\nsecond\n"))
    assert docs_outputs.main([str(page)]) == 1 and "old 1" in page.read_text()
    assert docs_outputs.main(["--update", str(page)]) == 0
    assert page.read_text() == "intro\n\n<!-- output of: dpaudit plan --x | lines 1 -->\n```text\nnew 2\n```\n\nend\n"
    assert docs_outputs.main([str(page)]) == 0
