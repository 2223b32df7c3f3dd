"""Imports flow one way: no module of toolctx imports, even for type checking, one that imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

import toolctx

PACKAGE = Path(toolctx.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Every toolctx module and the toolctx modules it imports (at any level, in any branch)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("toolctx"):
                for alias in node.names:
                    child = f"{node.module}.{alias.name}"
                    found.add(child if child in modules else node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("toolctx"))
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def test_no_import_cycle() -> None:
    graph = imports()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for child in sorted(graph[node]):
            if state.get(child) == 1:
                cycles.append([*stack[stack.index(child) :], child])
            elif child not in state:
                visit(child)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert cycles == []


def test_the_session_core_imports_no_higher_layer() -> None:
    graph = imports()
    core = [m for m in graph if m.startswith("toolctx.sessions") or m == "toolctx._decorator"]
    higher = ("toolctx.compaction", "toolctx.memory", "toolctx.server", "toolctx.compaction", "toolctx.testing")
    for module in core:
        assert not [m for m in graph[module] if m.startswith(higher)], module
