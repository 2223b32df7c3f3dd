"""The assembler's face: one meaning per name, the adapters' door, and no module reaching into another's privates."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

import toolctx.assembly
from toolctx import ToolctxWarning
from toolctx.assembly import ContextAssembler, ContextStrategy, StrategyInput, reset_after_failed_prepare

ROOT = Path(__file__).resolve().parents[2]
ASSEMBLY = sorted((ROOT / "toolctx" / "assembly").glob("*.py"))
ADAPTERS = sorted((ROOT / "integrations").glob("*/assembly.py"))


def test_the_strategy_type_has_the_seeds_name_and_no_other() -> None:
    assert not hasattr(toolctx.assembly, "Strategy")  # toolctx.selection.Strategy is the selection strategy class

    def mine(state: StrategyInput) -> None:
        return None

    chosen: ContextStrategy = mine
    ctx = ContextAssembler(strategy=chosen)
    assert ctx.get_strategy() is mine
    assert "compaction" in (toolctx.assembly.__doc__ or "")
    assert "→ :meth:`ToolOutputPlugin.add_output`" in (toolctx.assembly.__doc__ or "")


def test_reset_after_failed_prepare_starts_the_mirror_over_and_reports_only_the_last_try() -> None:
    ctx = ContextAssembler()
    ctx.add_message("user", "hello")
    mirrors: dict[int, object] = {id(ctx): "what the adapter gave", 7: "another assembler's"}
    reset_after_failed_prepare(ctx, mirrors, ValueError("first try"), last_try=False)
    assert ctx.get_history() == []
    assert mirrors == {7: "another assembler's"}
    with pytest.warns(ToolctxWarning, match="sending it as it is.*ValueError: second try"):
        reset_after_failed_prepare(ctx, mirrors, ValueError("second try"), last_try=True)


def _private_reads(path: Path) -> list[str]:
    """``x._name`` where ``x`` is not ``self`` or ``cls``, and imports of another package's underscore module."""
    found = []
    inside = path.parent.name == "assembly" and path.parent.parent.name == "toolctx"
    for node in ast.walk(ast.parse(path.read_text())):
        private = isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
        if private and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toolctx.assembly._") and not inside:
            found.append(f"{path.name}:{node.lineno} imports {node.module}")
    return found


def test_no_assembler_module_or_adapter_reads_another_objects_private_members() -> None:
    assert ASSEMBLY
    assert len(ADAPTERS) == 2
    offences = [o for path in [*ASSEMBLY, *ADAPTERS] for o in _private_reads(path)]
    assert offences == []


def test_no_class_name_is_defined_twice_in_the_assembler_or_the_integrations() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in [*ASSEMBLY, *sorted((ROOT / "integrations").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def test_every_file_of_the_assembler_stays_under_500_lines() -> None:
    assert {p.name: n for p in [*ASSEMBLY, *ADAPTERS] if (n := len(p.read_text().splitlines())) >= 500} == {}
