"""No import cycles among our own modules, and imports point down the layers.

A static walk over every ``import`` and ``from ... import`` statement of the four packages, at module
level and inside functions alike (a function-level import that closes a cycle is still a cycle; it only
moves the failure from import time to call time). ``from pkg import name`` is an edge to ``pkg.name``
when that is a module of ours, else to ``pkg`` itself. The implicit import of a parent package that
Python performs before a submodule is not counted (it would make every package that imports its own
submodules a cycle). Relative imports are resolved against the importing module.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("accounting", "dpfed", "attacks", "reports")
LAYER = {name: i for i, name in enumerate(PACKAGES)}  # accounting <- dpfed <- attacks <- reports


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def our_modules() -> dict[str, Path]:
    """Every module of the four packages, by dotted name."""
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([target] if target else []))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ours that ``module`` imports anywhere in its body."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                source = _resolve_relative(module, is_package, node.level, node.module)
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                found.add(sub if sub in modules else source)
    return {name for name in found if name in modules and name != module}


def import_graph() -> dict[str, set[str]]:
    modules = our_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def test_detector_finds_a_planted_cycle():
    graph = {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "a.w": {"a.x"}, "b": set()}
    assert find_cycles(graph) == [["a.x", "a.y", "a.z"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_detector_reads_function_level_and_relative_imports(tmp_path):
    modules = {"p": tmp_path / "__init__.py", "p.a": tmp_path / "a.py", "p.b": tmp_path / "b.py"}
    modules["p.a"].write_text("def f():\n    from . import b\n    return b\n")
    modules["p.b"].write_text("import os\nfrom p.a import f\n")
    assert imports_of("p.a", modules["p.a"], modules) == {"p.b"}
    assert imports_of("p.b", modules["p.b"], modules) == {"p.a"}


def test_no_import_cycles_among_our_modules():
    graph = import_graph()
    assert len(graph) > 50, "the walk found too few modules to be meaningful"
    cycles = find_cycles(graph)
    described = ["; ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c) for c in cycles]
    assert not cycles, "import cycles:\n" + "\n".join(described)


def test_imports_point_down_the_layers():
    upward = [
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        for target in targets
        if LAYER[target.split(".")[0]] > LAYER[module.split(".")[0]]
    ]
    assert not upward, "imports against the layering accounting <- dpfed <- attacks <- reports:\n" + "\n".join(upward)
