"""The audit path stays readable: no function of it is 50 lines or longer (issue 10, must show 5)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
AUDIT_PATH = [
    *sorted((ROOT / "reports" / "audit").glob("*.py")),
    ROOT / "reports" / "commands" / "audit.py",
    ROOT / "reports" / "commands" / "report.py",
    ROOT / "reports" / "consistency.py",
    ROOT / "reports" / "report_files.py",
    ROOT / "reports" / "render_text.py",
    ROOT / "reports" / "render_markdown.py",
    ROOT / "reports" / "render_html.py",
]


def function_lengths(path: Path) -> dict[str, int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        f"{path.name}:{node.name}": node.end_lineno - node.lineno + 1
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def test_every_function_of_the_audit_path_is_under_50_lines():
    lengths = {name: n for path in AUDIT_PATH for name, n in function_lengths(path).items()}
    assert len(lengths) > 80
    too_long = {name: n for name, n in lengths.items() if n >= 50}
    assert not too_long, too_long
