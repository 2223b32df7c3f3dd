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


# -- faces: what one package may use of another ------------------------------------------------------

ROOTS = [
    PACKAGE,
    *(
        PACKAGE.parent / "integrations" / name
        for name in ("toolctx_langchain", "toolctx_openai_agents", "toolctx_pytest")
    ),
]
NAMED_TUPLE_API = {"_asdict", "_field_defaults", "_fields", "_make", "_replace"}
DOCUMENTED_PRIVATE = {("sys", "_getframe")}  # (CPython's own, documented in the sys module)


def absolute_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """Every absolute import of a module, at any level: (line, ``module`` and each ``module.name`` it imports)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return found


def sources() -> dict[str, tuple[Path, ast.Module]]:
    """Every module of toolctx and the integration packages, by dotted name, with its tree."""
    found: dict[str, tuple[Path, ast.Module]] = {}
    for root in ROOTS:
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root.parent).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = (path, ast.parse(path.read_text()))
    return found


def package_of(module: str, modules: dict[str, tuple[Path, ast.Module]]) -> str:
    """The package a module belongs to: itself for a package's ``__init__``, else its parent."""
    path = modules[module][0] if module in modules else None
    if path is not None and path.name == "__init__.py":
        return module
    return module.rpartition(".")[0] or module


def test_no_module_imports_another_packages_underscore_module_or_name() -> None:
    """``toolctx.sessions._records`` is the sessions package's own: others use ``toolctx.sessions``' face."""
    modules = sources()
    found: list[str] = []
    for name, (path, tree) in modules.items():
        mine = package_of(name, modules)
        for lineno, target in absolute_imports(tree):
            parts = target.split(".")
            if parts[0] not in {"toolctx", "toolctx_langchain", "toolctx_openai_agents"}:
                continue
            private = next((i for i, part in enumerate(parts) if i and part.startswith("_")), None)
            if private is None or parts[private].startswith("__"):
                continue
            owner = package_of(".".join(parts[:private]), modules)
            if mine != owner and not mine.startswith(owner + "."):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{lineno} imports {target}")
    assert found == [], "\n".join(found)


def own_private_names(tree: ast.Module) -> set[str]:
    """Underscore names a module's own classes define: methods, class attributes, slots, ``self._x = ...``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in ast.walk(node):
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store):
                    names.add(item.attr)
                elif isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
                    names.add(item.id)
                elif isinstance(item, ast.Constant) and isinstance(item.value, str):
                    names.add(item.value)  # (a name in __slots__)
    return {n for n in names if n.startswith("_")}


def test_no_module_reads_another_objects_private_member() -> None:
    """``x._name`` only for ``self``/``cls``, or a member a class of the same module defines (Python's module
    privacy), never a member of another module's class: renaming it must not silently break a neighbour."""
    found: list[str] = []
    for path, tree in sources().values():
        own = own_private_names(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
                continue
            value = node.value
            if isinstance(value, ast.Name) and (
                value.id in {"self", "cls"} or (value.id, node.attr) in DOCUMENTED_PRIVATE
            ):
                continue
            if node.attr in own or node.attr in NAMED_TUPLE_API:
                continue
            found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} reads {ast.unparse(node)[:60]}")
    assert found == [], "\n".join(found)


def test_no_file_is_over_500_lines() -> None:
    """A file past 500 lines does more than one job: split it by responsibility."""
    long = [
        f"{p.relative_to(PACKAGE.parent)}: {n}"
        for p, _ in sources().values()
        if (n := len(p.read_text().splitlines())) > 500
    ]
    assert long == []


def test_no_class_name_is_defined_twice() -> None:
    """One meaning per name: two classes of one name (two PreparedContext, say) are one too many."""
    seen: dict[str, list[str]] = {}
    for name, (_, tree) in sources().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                seen.setdefault(node.name, []).append(name)
    assert {k: v for k, v in seen.items() if len(v) > 1} == {}


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
        for _, target in absolute_imports(ast.parse(path.read_text())):
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
