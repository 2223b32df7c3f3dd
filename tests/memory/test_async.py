"""The async API: the same operations, awaitable, run by the synchronous core in a worker thread."""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

import pytest

from toolctx.memory import AgentMemory, AsyncAgentMemory, AsyncMemoryStore, MemoryConfig, MemoryStore, Tier

from .conftest import FakeClock


def test_every_agent_operation_has_an_awaitable_twin_with_the_same_signature() -> None:
    public = {
        name
        for name, member in inspect.getmembers(AgentMemory, inspect.isfunction)
        if not name.startswith("_") and name != "should_flash_save"
    }
    for name in public:
        method = getattr(AsyncAgentMemory, name)
        assert inspect.iscoroutinefunction(method), name
        assert inspect.signature(method) == inspect.signature(getattr(AgentMemory, name)), name
    for name in ("agents", "agent_ids", "revision", "before_model_call", "task_completed", "close", "agent"):
        assert inspect.iscoroutinefunction(getattr(AsyncMemoryStore, name)), name


def test_the_seed_methods_work_awaited_without_blocking_the_loop(db_url: str, clock: FakeClock) -> None:
    async def main() -> dict[str, Any]:
        loop_thread = threading.get_ident()
        threads: list[int] = []
        store = await AsyncMemoryStore.open(db_url, config=MemoryConfig(clock=clock))
        async with store:
            store.subscribe(lambda event: threads.append(threading.get_ident()))
            agent = await store.agent("worker")
            item_id = await agent.save_context_item("TASK", "add retry to the uploader")
            code_id = await agent.save_context_item("CODE", "def upload(): ...")
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0)

            running = asyncio.create_task(ticker())
            hot = await agent.load_context()
            tiers = await agent.update_tiers()
            flash = await agent.flash_save()
            summaries = await store.agents()
            running.cancel()
            return {
                "ids": (item_id, code_id),
                "hot": [item.id for item in hot],
                "tiers": tiers,
                "flash": flash,
                "summaries": summaries,
                # events: registered, two saves, tiers updated, flash saved
                "off_loop": all(t != loop_thread for t in threads) and len(threads) == 5,
                "ticks": ticks,
                "revision": await store.revision(),
            }

    got = asyncio.run(main())
    assert got["hot"] == [got["ids"][0], got["ids"][1]] or set(got["hot"]) == set(got["ids"])
    assert got["tiers"].hot_count == 2
    assert got["flash"].hot_items_retained == 2
    assert [s.agent_id for s in got["summaries"]] == ["worker"]
    assert got["off_loop"], "writes ran in worker threads, so their events came from there"
    assert got["revision"] >= 5


def test_errors_reach_the_awaiting_caller_unchanged(store: MemoryStore) -> None:
    agent = AsyncAgentMemory(store.agent("worker"))

    async def main() -> None:
        await agent.save("NOT_A_TYPE", "x")

    with pytest.raises(ValueError, match="unknown item_type 'NOT_A_TYPE'"):
        asyncio.run(main())
    assert store.agent("worker").items() == []
    with pytest.raises(TypeError, match="wraps an AgentMemory"):
        AsyncAgentMemory(store)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"AsyncMemoryStore\.open"):
        AsyncMemoryStore("sqlite://")  # type: ignore[arg-type]


def test_async_and_sync_views_see_the_same_memory(store: MemoryStore) -> None:
    async def main() -> list[Any]:
        agent = AsyncAgentMemory(store.agent("worker"))
        saved = await agent.save("CODE", "x = 1")
        await agent.use([saved.id])
        return [await agent.get(saved.id), await agent.items(Tier.HOT)]

    item, hot = asyncio.run(main())
    assert store.agent("worker").get(item.id) == item
    assert [i.id for i in hot] == [item.id]
    assert item.access_count == 1
