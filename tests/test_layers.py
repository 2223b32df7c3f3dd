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
    higher = ("toolctx.compaction", "toolctx.memory", "toolctx.server", "toolctx.standins", "toolctx.testing")
    for module in core:
        assert not [m for m in graph[module] if m.startswith(higher)], module


def subpackage_imports() -> dict[tuple[str, str], list[str]]:
    """For each pair (A, B) of toolctx's subpackages where A imports B (at any level, lazily or for typing),
    the ``module -> imported module`` lines that do it."""
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) < 2 or parts[0] not in subpackages:
            continue
        importer = parts[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                names = target.split(".")
                if names[0] == "toolctx" and len(names) > 1 and names[1] in subpackages and names[1] != importer:
                    found.setdefault((importer, names[1]), []).append(f"{'/'.join(parts)} -> {target}")
    return found


def test_no_pair_of_subpackages_imports_each_other() -> None:
    edges = subpackage_imports()
    assert ("cli", "memory") in edges  # the scan sees real imports (the CLI's memory commands)
    mutual = {(a, b): edges[a, b] + edges[b, a] for a, b in edges if a < b and (b, a) in edges}
    assert mutual == {}


def test_the_server_never_imports_the_cli() -> None:
    edges = subpackage_imports()
    assert ("server", "sessions") in edges  # the dashboard reads kept sessions through the sessions face
    assert ("server", "cli") not in edges


def test_private_modules_of_storage_cli_and_server_stay_inside_their_package() -> None:
    guarded = ("storage", "cli", "server")
    offending = []
    for path in sorted(PACKAGE.rglob("*.py")):
        inside = path.relative_to(PACKAGE).parts[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            else:
                continue
            for module in modules:
                names = module.split(".")
                if (
                    len(names) > 2
                    and names[0] == "toolctx"
                    and names[1] in guarded
                    and names[1] != inside
                    and names[2].startswith("_")
                    and names[2] != "__main__"
                ):
                    offending.append(f"{path.relative_to(PACKAGE)} -> {module}")
    assert offending == []
