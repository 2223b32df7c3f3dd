"""One package for the fresh context, budgets included, and one meaning per public name."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import toolctx.fresh
from toolctx.fresh import AgentContextResult, TaskSpec, TokenBudgeter, create_context_system
from toolctx.tokens import EstimateCounter

FACES = (
    "toolctx",
    "toolctx.assembly",
    "toolctx.compaction",
    "toolctx.errors",
    "toolctx.fresh",
    "toolctx.memory",
    "toolctx.models",
    "toolctx.redaction",
    "toolctx.selection",
    "toolctx.sessions",
    "toolctx.storage",
    "toolctx.tokens",
)


def test_the_budgeter_is_part_of_fresh_and_the_old_package_is_gone() -> None:
    budget = TokenBudgeter(counter=EstimateCounter()).create_budget(150_000)
    assert budget["files"] == 75_600
    for name in ("TokenBudget", "FixedAllocations", "DynamicShares", "truncate_lines", "fit_items", "share_out"):
        assert name in toolctx.fresh.__all__
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("toolctx.budget")


def test_preparing_an_agent_context_gives_an_agent_context_result(project: Path) -> None:
    system = create_context_system(project, counter=EstimateCounter())
    result = system.integration.prepare_agent_context_sync("a", TaskSpec(id="t", name="Charge cards"))
    assert isinstance(result, AgentContextResult)
    assert result.success
    assert result.context is not None
    assert not hasattr(toolctx.fresh, "PreparedContext")  # the assembler's name, for the assembler's object


def test_a_name_of_the_fresh_or_memory_face_means_the_same_object_on_every_face() -> None:
    exported = {face: importlib.import_module(face) for face in FACES}
    clashes = []
    for own in ("toolctx.fresh", "toolctx.memory"):
        for name in exported[own].__all__:
            for face, module in exported.items():
                other = getattr(module, name, None) if name in module.__all__ else None
                if face != own and other is not None and other is not getattr(exported[own], name):
                    clashes.append(f"{own}.{name} is not {face}.{name}")
    assert clashes == []
