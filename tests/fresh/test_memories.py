"""Memories in the context: the agent's HOT items, then the WARM ones relevant to the task, never another agent's."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolctx.fresh import ContextOptions, TaskSpec, create_context_system
from toolctx.tokens import EstimateCounter

pytest.importorskip("sqlalchemy")

from toolctx.memory import MemoryStore

TASK = TaskSpec(id="t", name="Fix currency conversion", description="convert_currency rounds USD wrongly")


@pytest.fixture
def store(tmp_path: Path):
    with MemoryStore(tmp_path / "memory.db") as store:
        a = store.agent("a")
        a.save("TASK", "Always round money half-even")  # HOT (weight 1.0)
        a.save("ERROR", "convert_currency raised KeyError for GBP")  # WARM (0.6), relevant
        a.save("ERROR", "the web build failed on node 18")  # WARM, unrelated
        store.agent("b").save("TASK", "Agent b's private plan")
        yield store


def test_hot_items_first_then_relevant_warm_ones(project: Path, store) -> None:
    system = create_context_system(project, memory=store, counter=EstimateCounter())
    context = system.manager.build_fresh_context_sync(TASK, agent_id="a")
    entries = [(m.tier, m.content) for m in context.relevant_memories]
    assert entries == [("HOT", "Always round money half-even"), ("WARM", "convert_currency raised KeyError for GBP")]
    assert "- [TASK, HOT] Always round money half-even" in context.sections["memories"]
    assert "Agent b's private plan" not in context.render()
    assert context.breakdown.memories > 0


def test_the_memory_limit_and_agents_without_memory(project: Path, store) -> None:
    system = create_context_system(project, memory=store, counter=EstimateCounter())
    one = system.manager.build_fresh_context_sync(TASK, ContextOptions(max_memories=1), agent_id="a")
    assert [m.tier for m in one.relevant_memories] == ["HOT"]
    assert system.manager.build_fresh_context_sync(TASK, agent_id="nobody").relevant_memories == ()
    assert system.manager.build_fresh_context_sync(TASK).relevant_memories == ()  # no agent, no memories


def test_building_does_not_count_as_an_access(project: Path, store) -> None:
    system = create_context_system(project, memory=store, counter=EstimateCounter())
    before = [(i.id, i.access_count) for i in store.agent("a").items()]
    system.manager.build_fresh_context_sync(TASK, agent_id="a")
    assert [(i.id, i.access_count) for i in store.agent("a").items()] == before
