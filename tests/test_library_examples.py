"""The examples of docs/how-to/use-as-a-library.md run as written and print what the page shows.

Each ```python block is a complete script, run in its own interpreter (as a user would save and run it); the
```text block after it is its standard output. Words must match exactly; figures to 0.5% (relative), since the
accountants' numerics may move in their last digits between library versions. Every figure shown is an
accountant's epsilon or an estimator's bound on seeded scores, so a run is deterministic: no false failures.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "how-to" / "use-as-a-library.md"
BLOCK = re.compile(r"```python\n(.*?)```\n\n```text\n(.*?)```", re.S)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")
RELATIVE_TOLERANCE = 0.005


def examples() -> list[tuple[str, str]]:
    return BLOCK.findall(PAGE.read_text(encoding="utf-8"))


def same_output(shown: str, printed: str) -> bool:
    """Equal words, and each figure within ``RELATIVE_TOLERANCE`` of the shown one."""
    shown_lines, printed_lines = shown.strip().splitlines(), printed.strip().splitlines()
    if len(shown_lines) != len(printed_lines):
        return False
    for want, got in zip(shown_lines, printed_lines, strict=True):
        if NUMBER.sub("#", want).split() != NUMBER.sub("#", got).split():
            return False
        for a, b in zip(NUMBER.findall(want), NUMBER.findall(got), strict=True):
            if not math.isclose(float(a), float(b), rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-12):
                return False
    return True


def test_the_page_has_its_three_examples():
    assert len(examples()) == 3


def test_the_comparison_catches_a_changed_figure_or_word():
    shown = "pld    ok           1.515"
    assert same_output(shown, "pld    ok           1.516")
    assert not same_output(shown, "pld    ok           1.600")
    assert not same_output(shown, "rdp    ok           1.515")
    assert not same_output(shown, shown + "\nanother line")


@pytest.mark.slow
@pytest.mark.parametrize("index", range(3))
def test_each_example_prints_what_the_page_shows(index, tmp_path):
    code, shown = examples()[index]
    script = tmp_path / f"example_{index}.py"
    script.write_text(code, encoding="utf-8")
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert same_output(shown, run.stdout), f"the page shows:\n{shown}\nthe example printed:\n{run.stdout}"
