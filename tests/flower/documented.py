"""The Flower figures as README.md and BENCHMARKS.md print them, for the tests that rerun them
(``test_documented_figures.py``, ``test_config_check.py``, ``test_flwr_app.py``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def section(document: str, heading: str) -> str:
    """The text of ``document`` (a page of docs/, README.md or BENCHMARKS.md) from the line ``heading`` to the next
    heading of the
    same or a higher level."""
    text = "\n" + (ROOT / document).read_text(encoding="utf-8")
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index("\n" + heading + "\n") + 1
    stop = re.compile(rf"^#{{1,{level}}} ", re.M).search(text, start + len(heading))
    return text[start:stop.start() if stop else len(text)]


def between(text: str, start: str, stop: str) -> str:
    """The part of ``text`` from ``start`` up to ``stop``."""
    begin = text.index(start)
    return text[begin:text.index(stop, begin)]


def find(pattern: str, text: str) -> re.Match:
    """The one match of ``pattern`` (whitespace in it matches any run of whitespace, line breaks included)."""
    found = list(re.finditer(re.sub(r"\\? ", r"\\s+", pattern), text))
    assert len(found) == 1, f"{len(found)} matches of {pattern!r} in the documentation"
    return found[0]


def table_rows(text: str, first_cell: str) -> list[list[str]]:
    """The cells of every markdown table row of ``text`` whose first cell starts with ``first_cell``."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("|")]
    return [row for row in rows if row[0].startswith(first_cell)]


def printed(documented: str, fresh: float) -> bool:
    """Whether ``fresh`` prints as ``documented`` at the documented number of decimals (the tolerance of every
    documented figure: half a unit of its last printed digit)."""
    decimals = len(documented.split(".")[1]) if "." in documented else 0
    return f"{fresh:.{decimals}f}" == documented
