"""The output blocks the documentation shows, produced by the commands they come from.

A page shows a command's output in a fenced ``text`` block preceded by a marker naming the command (an HTML
comment, which MkDocs passes through unseen)::

    <!-- output of: dpaudit estimate configs/estimate_example_multirun.csv --claim-epsilon 1 | from estimator -->
    ```text
    estimator                epsilon >=     delta  conf.  kind           threshold choice
    ...
    ```

After the command, options separated by `` | `` say which part of its standard output is shown, applied in
this order: ``from TEXT`` (start at the first line starting with TEXT), ``lines N`` (the first N lines),
``cut N`` (a line longer than N characters is cut at a space and ends with `` ...``), ``wrap N`` (each line
wrapped at N characters), and how the figures compare: ``tolerance R`` (each number within relative R of the
command's; default: equal as printed, for a seeded command whose output repeats).

The suite (``tests/test_docs_outputs.py``) runs each command in a scratch directory prepared as for every
documented command (``tests/test_readme_commands.py``), selects the same part of its output, and compares it
with the block: text exactly after masking (trailing spaces, temporary paths, durations in seconds), numbers
as the option says. So a page cannot drift from the code; after a deliberate change of what a command prints,
rewrite every block from the code with::

    python -m tests.docs_outputs --update        # or without --update: list the blocks that differ
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- output of: (?P<spec>.+?) -->\n```text\n(?P<body>.*?)^```\n", re.S | re.M)
OUTPUT_LANGUAGES = ("", "text", "console", "output")  # a fenced block in one of these shows output
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
MASKS = [  # (pattern, replacement) applied to both sides before comparing
    (re.compile(r"/tmp/\S*"), "<tmp>"),
    (re.compile(r"\b\d+(?:\.\d+)? ?(?:s|seconds|min)\b(?= |,|\)|;|$)"), "<duration>"),
]
CHILD = "import sys; from reports.cli import main; sys.exit(main(sys.argv[1:]))"


@dataclass
class ShownBlock:
    """One shown-output block of a page: the command, the selection and comparison options, the text shown."""

    page: Path
    command: str
    options: list[tuple[str, str]]
    shown: str
    span: tuple[int, int]  # character offsets of the block's body in the page

    @property
    def where(self) -> str:
        line = self.page.read_text(encoding="utf-8")[: self.span[0]].count("\n") + 1
        return f"{self.page.relative_to(ROOT)}:{line}"

    @property
    def tolerance(self) -> float:
        return float(dict(self.options).get("tolerance", 0.0))


def pages() -> list[Path]:
    """README.md and every page of the documentation's nav."""
    from tests.test_readme_commands import documented_pages

    return documented_pages()


def parse_spec(spec: str) -> tuple[str, list[tuple[str, str]]]:
    """``COMMAND | option value | ...`` -> the command and its options (name, value)."""
    command, *rest = [part.strip() for part in spec.split(" | ")]
    options = []
    for part in rest:
        name, _, value = part.partition(" ")
        if name not in {"from", "lines", "cut", "wrap", "tolerance"}:
            raise ValueError(f"unknown shown-output option {name!r} in {spec!r}")
        options.append((name, value))
    if not command.startswith("dpaudit "):
        raise ValueError(f"a shown output must come from a dpaudit command: {spec!r}")
    return command, options


def shown_blocks(page: Path) -> list[ShownBlock]:
    text = page.read_text(encoding="utf-8")
    blocks = []
    for match in MARKER.finditer(text):
        command, options = parse_spec(match.group("spec"))
        blocks.append(ShownBlock(page, command, options, match.group("body"), match.span("body")))
    return blocks


def unmarked_output_blocks(page: Path) -> list[str]:
    """Fenced blocks that show output (no language, or ``text``) without a marker naming their command."""
    text, found = page.read_text(encoding="utf-8"), []
    marked = {b.span[0] for b in shown_blocks(page)}
    for match in re.finditer(r"^```(?P<lang>[^\n]*)\n(?P<body>.*?)^```\n", text, flags=re.S | re.M):
        if match.group("lang").strip() in OUTPUT_LANGUAGES and match.start("body") not in marked:
            found.append(f"{page.relative_to(ROOT)}:{text[: match.start()].count(chr(10)) + 1}")
    return found


def select(output: str, options: list[tuple[str, str]]) -> str:
    """The part of a command's output a block shows, as the options say (see the module's docstring)."""
    lines = [line.rstrip() for line in output.rstrip("\n").split("\n")]
    for name, value in options:
        if name == "from":
            start = next((i for i, line in enumerate(lines) if line.startswith(value)), None)
            if start is None:
                raise ValueError(f"no output line starts with {value!r}")
            lines = lines[start:]
        elif name == "lines":
            lines = lines[: int(value)]
        elif name == "cut":
            width = int(value)
            lines = [line if len(line) <= width else line[: line.rfind(" ", 0, width - 3)] + " ..." for line in lines]
        elif name == "wrap":
            wrap = textwrap.TextWrapper(int(value), break_on_hyphens=False, break_long_words=False)
            lines = [wrapped for line in lines for wrapped in (wrap.wrap(line) or [""])]
    return "\n".join(lines) + "\n"


def _mask(text: str) -> str:
    text = "\n".join(line.rstrip() for line in text.strip("\n").split("\n"))
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text


def differences(shown: str, produced: str, tolerance: float = 0.0) -> list[str]:
    """How a shown block differs from what its command produced (empty: they agree).

    Text is compared exactly after masking; each number as printed (``tolerance`` 0) or within relative
    ``tolerance`` of the produced one."""
    shown_lines, produced_lines = _mask(shown).split("\n"), _mask(produced).split("\n")
    problems = []
    if len(shown_lines) != len(produced_lines):
        problems.append(f"{len(shown_lines)} lines shown, {len(produced_lines)} produced")
    for number, (mine, theirs) in enumerate(zip(shown_lines, produced_lines, strict=False), start=1):
        if NUMBER.sub("#", mine) != NUMBER.sub("#", theirs):
            problems.append(f"line {number}: shown {mine!r}, produced {theirs!r}")
            continue
        for a, b in zip(NUMBER.findall(mine), NUMBER.findall(theirs), strict=True):
            same = a == b or float(a) == float(b)
            if not same and not (tolerance and abs(float(a) - float(b)) <= tolerance * abs(float(b))):
                limit = f"relative tolerance {tolerance}" if tolerance else "as printed"
                problems.append(f"line {number}: shown {a}, produced {b} ({limit}): {theirs!r}")
    return problems


def run_command(command: str, work: Path, timeout: float = 600) -> tuple[int, str]:
    """Run a documented ``dpaudit`` command in ``work`` (its own process); its exit code and standard output."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               MPLBACKEND="Agg", COLUMNS="120")
    done = subprocess.run([sys.executable, "-c", CHILD, *shlex.split(command)[1:]], cwd=work, env=env,
                          capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout


def scratch_directory(where: Path) -> Path:
    """A directory prepared as the documented commands expect (``configs/``, the example apps, ...)."""
    from tests.test_readme_commands import prepare_workdir

    work = where / "work"
    work.mkdir()
    prepare_workdir(work)
    return work


def produce(block: ShownBlock, work: Path) -> str:
    """What ``block`` should show: its command's output, selected as its options say."""
    _, output = run_command(block.command, work)
    return select(output, block.options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check (or, with --update, rewrite) the documentation's "
                                                 "shown-output blocks from the commands they come from.")
    parser.add_argument("--update", action="store_true", help="rewrite every block from its command's output")
    parser.add_argument("pages", nargs="*", type=Path, help="only these pages (default: README and every nav page)")
    args = parser.parse_args(argv)
    chosen = [p.resolve() for p in args.pages] or pages()
    drift = 0
    with tempfile.TemporaryDirectory() as scratch:
        work = scratch_directory(Path(scratch))
        for page in chosen:
            text, edits = page.read_text(encoding="utf-8"), []
            for block in shown_blocks(page):
                produced = produce(block, work)
                problems = differences(block.shown, produced, block.tolerance)
                if problems:
                    drift += 1
                    print(f"{block.where}: {block.command}\n  " + "\n  ".join(problems))
                    edits.append((block.span, produced))
            if args.update and edits:
                for (start, end), produced in sorted(edits, reverse=True):
                    text = text[:start] + produced + text[end:]
                page.write_text(text, encoding="utf-8")
                print(f"rewrote {len(edits)} block(s) of {page.relative_to(ROOT)}")
    if not drift:
        print("every shown output block matches its command")
    return 1 if drift and not args.update else 0


if __name__ == "__main__":
    sys.exit(main())
