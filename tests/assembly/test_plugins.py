"""The built-in plugins: the plan (never compacted) and the memory index (compaction shows less, deletes nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolctx.assembly import ContextAssembler, MemoryPlugin, PlanPlugin
from toolctx.errors import ConfigError

from .conftest import CharCounter, run


def test_the_plan_shows_statuses_and_the_next_tasks() -> None:
    plan = PlanPlugin(
        {
            "goal": "release",
            "tasks": [
                {"id": "build", "description": "build wheels"},
                {"id": "test", "description": "run tests", "depends_on": ["build"]},
                {"id": "docs", "description": "write notes"},
            ],
        }
    )
    assert [t.id for t in plan.executable_tasks()] == ["build", "docs"]
    plan.update_task_status("build", "completed")
    plan.update_task_status("docs", "failed")
    assert [t.id for t in plan.executable_tasks()] == ["test"]
    assert plan.get_component() == (
        "Goal: release\n- [x] build: build wheels\n- [ ] test: run tests (after build)\n- [!] docs: write notes"
    )
    with pytest.raises(ConfigError, match="no task 'deploy' in the plan; its tasks are"):
        plan.update_task_status("deploy", "completed")
    with pytest.raises(ConfigError, match="status must be one of"):
        plan.update_task_status("test", "done")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="depends on unknown tasks"):
        plan.set_plan({"tasks": [{"id": "a", "description": "x", "depends_on": ["zz"]}]})


def test_the_plan_is_never_compacted() -> None:
    ctx = ContextAssembler(max_tokens=400, counter=CharCounter())
    ctx.register_plugin(PlanPlugin({"goal": "g", "tasks": [{"id": "1", "description": "d" * 200}]}))
    ctx.register_plugin(lambda: "n" * 150, name="notes", priority=3, compactable=True)
    prepared = run(ctx.prepare())
    assert [c.name for c in prepared.components] == ["plan"]  # the notes were left out, the plan stays
    assert prepared.log[-1].action == "omitted"
    assert prepared.budget.used <= 400


@pytest.fixture
def memory(tmp_path: Path):  # type: ignore[no-untyped-def]
    from toolctx.memory import MemoryStore

    store = MemoryStore(f"sqlite:///{tmp_path / 'memory.db'}")
    agent = store.agent("worker")
    for n in range(8):
        agent.save("TASK", f"task {n}: " + "t" * 80)
    agent.save("ERROR", "a WARM error item")
    yield agent
    store.close()


def test_the_memory_index_shows_hot_items_then_warm_on_demand(memory) -> None:  # type: ignore[no-untyped-def]
    plugin = MemoryPlugin(memory, max_items=5, preview_chars=20)
    text = plugin.get_component()
    assert text is not None
    assert len(text.splitlines()) == 5
    assert "ERROR" not in text
    assert text.splitlines()[0].endswith(" [...]")
    plugin.show_warm(3)
    assert "a WARM error item" in (plugin.get_component() or "")


def test_compacting_the_memory_index_shows_less_and_deletes_nothing(memory) -> None:  # type: ignore[no-untyped-def]
    plugin = MemoryPlugin(memory)
    plugin.show_warm()
    ctx = ContextAssembler(max_tokens=900, counter=CharCounter(), plugins=[plugin])
    prepared = run(ctx.prepare())
    assert prepared.log[0].component == "memory_index"
    assert prepared.budget.used <= 450
    assert plugin.warm == 0
    assert plugin.shown < 20
    assert len(memory.items()) == 9
    assert ctx.get_state().plugins["memory_index"] == {"shown": plugin.shown, "warm": 0}
    plugin.reset()
    assert plugin.shown == 20


def test_memory_index_compaction_reports_what_it_freed(memory) -> None:  # type: ignore[no-untyped-def]
    plugin = MemoryPlugin(memory, max_items=6)
    plugin.show_warm(2)
    counter = CharCounter()
    before = plugin.get_component() or ""
    freed = plugin.compact(len(before) // 4, counter)
    after = plugin.get_component() or ""
    assert (plugin.warm, plugin.shown) == (0, 1)
    assert freed == len(before) - len(after) > 0
    assert after == before.splitlines()[0]  # the best HOT item stays


def test_the_memory_index_follows_every_write_even_from_another_store(memory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from toolctx.memory import MemoryStore

    plugin = MemoryPlugin(memory, max_items=30)
    ctx = ContextAssembler(counter=CharCounter(), plugins=[plugin])
    first = run(ctx.prepare()).to_openai()[-1]["content"]
    assert run(ctx.prepare()).to_openai()[-1]["content"] == first  # nothing written: the same index
    memory.save("TASK", "saved through this store")
    assert "saved through this store" in run(ctx.prepare()).to_openai()[-1]["content"]
    other = MemoryStore(f"sqlite:///{tmp_path / 'memory.db'}")  # as another process would open it
    try:
        other.agent("worker").save("TASK", "saved through another store")
    finally:
        other.close()
    assert "saved through another store" in run(ctx.prepare()).to_openai()[-1]["content"]


def test_memory_plugin_refuses_what_is_not_a_memory() -> None:
    with pytest.raises(ConfigError, match="AgentMemory"):
        MemoryPlugin("sqlite:///x.db")  # type: ignore[arg-type]
