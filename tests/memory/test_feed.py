"""The change feed: in-process events, the store revision, agent summaries, and PostgreSQL NOTIFY."""

from __future__ import annotations

import multiprocessing
from typing import Any

import psycopg
import pytest

from toolctx.errors import UnknownItemError
from toolctx.memory import AgentMemory, AgentSummary, MemoryConfig, MemoryStore

from .conftest import DAY, FakeClock


def _save_in_another_process(url: str, agent_id: str) -> None:
    with MemoryStore(url) as store:
        store.agent(agent_id).save("TASK", "written elsewhere")


def test_every_write_sends_one_event_after_its_commit(store: MemoryStore, clock: FakeClock) -> None:
    events: list[dict[str, Any]] = []
    seen_revisions: list[int] = []

    def record(event: dict[str, Any]) -> None:
        events.append(event)
        seen_revisions.append(store.revision())  # the write is committed when the event comes

    store.subscribe(record)
    agent = store.agent("worker")
    task = agent.save("TASK", "fix the parser")
    ids = agent.save_many([("CODE", "def parse(): ..."), ("ERROR", "ValueError")])
    agent.update(task.id, "fix the parser and the lexer")
    clock.advance(hours=12)
    tiers = agent.update_tiers()
    flash = agent.flash_save()
    restored = agent.restore(flash.checkpoint_id)
    archived = agent.archive([ids[0]])

    registered = events.pop(0)
    assert registered == {"event": "registered", "agent_id": "worker", "revision": registered["revision"]}
    assert [e["event"] for e in events] == [
        "saved",
        "saved",
        "saved",
        "tiers_updated",
        "flash_saved",
        "restored",
        "archived",
    ]
    assert all(e["agent_id"] == "worker" for e in events)
    assert events[0]["item_ids"] == [task.id]
    assert events[1]["item_ids"] == ids
    assert events[2] == {**events[2], "item_ids": [task.id], "modified": True}
    assert events[3]["cold_count"] == tiers.cold_count
    assert events[4]["checkpoint_id"] == flash.checkpoint_id
    assert events[4]["items_archived"] == flash.items_archived
    assert sorted(events[5]["item_ids"]) == sorted(item.id for item in restored.items)
    assert events[6]["item_ids"] == archived == [ids[0]]
    revisions = [registered["revision"]] + [e["revision"] for e in events]
    assert revisions == sorted(set(revisions)), "each write has a revision of its own, growing"
    assert seen_revisions == revisions


def test_registering_an_agent_sends_one_event_and_a_known_agent_none(store: MemoryStore) -> None:
    events: list[dict[str, Any]] = []
    store.subscribe(events.append)
    store.agent("worker")
    assert events == [{"event": "registered", "agent_id": "worker", "revision": store.revision()}]
    before = store.revision()
    store.agent("worker")  # known: nothing is written, nothing told
    assert (len(events), store.revision()) == (1, before)
    # An agent added by its first write is announced by that write's event alone.
    item = AgentMemory(store, "lazy", create_on_write=True).save("TASK", "the first write registers it")
    assert [(e["event"], e["agent_id"]) for e in events[1:]] == [("saved", "lazy")]
    assert events[1]["item_ids"] == [item.id]
    assert store.agent_ids() == ["lazy", "worker"]


def test_unsubscribe_stops_events_and_a_failing_subscriber_breaks_nothing(store: MemoryStore) -> None:
    kept: list[str] = []

    def broken(_event: dict[str, Any]) -> None:
        raise RuntimeError("dashboard went away")

    store.subscribe(broken)
    unsubscribe = store.subscribe(lambda event: kept.append(event["event"]))
    agent = store.agent("worker")
    assert agent.save("TASK", "one").id > 0  # the broken subscriber did not fail the save
    unsubscribe()
    unsubscribe()  # a second call is harmless
    agent.save("TASK", "two")
    assert kept == ["registered", "saved"]
    with pytest.raises(TypeError, match="subscribe takes a function"):
        store.subscribe("not callable")  # type: ignore[arg-type]


def test_a_refused_write_sends_no_event_and_keeps_the_revision(store: MemoryStore) -> None:
    agent = store.agent("worker")
    events: list[dict[str, Any]] = []
    store.subscribe(events.append)
    before = store.revision()
    with pytest.raises(UnknownItemError):
        agent.archive([10**9])
    with pytest.raises(ValueError):
        agent.save("NOT_A_TYPE", "x")
    assert events == []
    assert store.revision() == before


def test_revision_moves_on_writes_from_other_processes(db_url: str) -> None:
    with MemoryStore(db_url) as store:
        before = store.revision()
        context = multiprocessing.get_context("spawn")
        child = context.Process(target=_save_in_another_process, args=(db_url, "remote"))
        child.start()
        child.join(120)
        assert child.exitcode == 0
        assert store.revision() > before
        [summary] = store.agents()
        assert (summary.agent_id, summary.hot_count) == ("remote", 1)


def test_agents_summarise_tiers_tokens_archive_and_last_update(store: MemoryStore, clock: FakeClock) -> None:
    assert store.agents() == []
    idle = store.agent("idle")
    busy = store.agent("busy")
    busy.save_many([("TASK", "the task " * 10), ("CODE", "x = 1"), ("ERROR", "boom")])
    clock.advance(days=60)
    busy.update_tiers()
    busy.flash_save()
    busy.save("TEST_RESULT", "1 passed")
    summaries = {summary.agent_id: summary for summary in store.agents()}
    assert list(summaries) == ["busy", "idle"]
    stats = busy.stats()
    got = summaries["busy"]
    assert isinstance(got, AgentSummary)
    assert (got.hot_count, got.warm_count, got.cold_count) == (
        stats.hot_count,
        stats.warm_count,
        stats.cold_count - stats.archived_count,
    )
    assert got.archived_count == stats.archived_count > 0
    assert got.hot_tokens + got.warm_tokens + got.cold_tokens + got.archived_tokens == stats.total_tokens
    assert got.total_items == stats.total_items == 4
    assert got.updated_at is not None
    assert got.updated_at.timestamp() == clock.now
    quiet = summaries["idle"]
    assert (quiet.hot_count, quiet.archived_count, quiet.total_items) == (0, 0, 0)
    assert quiet.updated_at is not None
    assert quiet.updated_at.timestamp() == clock.now - 60 * DAY
    assert idle.agent_id == quiet.agent_id


def test_postgresql_notifies_listeners_when_a_write_commits(postgres_url: str, clock: FakeClock) -> None:
    store = MemoryStore(postgres_url, config=MemoryConfig(clock=clock))
    listener = psycopg.connect(postgres_url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True)
    try:
        listener.execute("LISTEN toolctx_memory")
        agent = store.agent("notified")
        list(listener.notifies(timeout=0.5))  # the registration's notice
        agent.save("TASK", "hello")
        agent.update_tiers()
        heard = [(n.channel, n.payload) for n in listener.notifies(timeout=5, stop_after=2)]
        assert heard == [("toolctx_memory", "notified")] * 2
    finally:
        listener.close()
        store.close()
