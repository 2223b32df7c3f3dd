"""A long-running agent's first flash save archives its whole backlog of COLD items; they come back when used.

Archived items have no entry in the index of unarchived items, so these tests check
every way of reading them: tier lookups, stats, agent summaries, diffs and restores,
on SQLite and on PostgreSQL, and a store created with the earlier index layout.
"""

from __future__ import annotations

import random
from typing import Any

import sqlalchemy

from tests.memory.conftest import FakeClock
from toolctx.memory import AgentMemory, MemoryConfig, MemoryStore, Tier

SCORES = (0.05, 0.2, 0.5, 0.9)  # COLD, COLD, WARM, HOT


def _backlog(store: MemoryStore) -> AgentMemory:
    """An agent with 1,500 items spread over the three tiers, the newest 300 in its working set, and a neighbour."""
    rng = random.Random(11)
    store.agent("neighbour").save_many([("CODE", f"neighbour's old code {n}", 0.05) for n in range(200)], loaded=False)
    agent = store.agent("worker")
    for batch in range(5):
        entries = [("CODE", f"item {batch}-{n}", rng.choice(SCORES)) for n in range(300)]
        agent.save_many(entries, loaded=batch == 4)
    return agent


def test_the_first_flash_save_archives_exactly_the_cold_backlog(store: MemoryStore) -> None:
    agent = _backlog(store)
    set_aside = [item.id for item in agent.items(Tier.WARM)[:5]]
    agent.archive(set_aside)  # archived by hand earlier: stays archived, not counted again
    cold = {item.id for item in agent.items(Tier.COLD)}
    cold_tokens = sum(item.tokens for item in agent.items(Tier.COLD))
    working = {item.id: item for item in agent.working_set()}
    before = agent.stats()
    cold_snapshot = agent.snapshot(Tier.COLD)
    working_snapshot = agent.snapshot(None)
    events: list[dict[str, Any]] = []
    store.subscribe(events.append)
    assert len(cold) > 600

    result = agent.flash_save()

    assert result.items_archived == len(cold)
    assert [(e["event"], e["items_archived"]) for e in events] == [("flash_saved", len(cold))]
    archived = {item.id for item in agent.items(archived=True) if item.archived}
    assert archived == cold | set(set_aside)
    assert agent.items(Tier.COLD) == []
    assert agent.load(Tier.COLD) == []
    after = agent.stats()
    assert after.archived_count == len(cold) + len(set_aside)
    assert (after.total_items, after.hot_count, after.warm_count, after.cold_count) == (
        before.total_items,
        before.hot_count,
        before.warm_count,
        before.cold_count,
    )  # the tier counts of stats() include archived items
    [summary] = [s for s in store.agents() if s.agent_id == "worker"]
    assert (summary.cold_count, summary.cold_tokens) == (0, 0)
    set_aside_tokens = sum(agent.get(i).tokens for i in set_aside)
    assert (summary.archived_count, summary.archived_tokens) == (len(archived), cold_tokens + set_aside_tokens)
    neighbour = store.agent("neighbour")
    assert len(neighbour.items(Tier.COLD)) == 200
    assert neighbour.stats().archived_count == 0

    cold_diff = agent.diff(cold_snapshot)
    assert (cold_diff.removed, cold_diff.added, cold_diff.modified) == (sorted(cold), [], [])
    working_diff = agent.diff(working_snapshot)
    left = sorted(i for i, item in working.items() if item.tier is not Tier.HOT)
    assert working_diff.removed == left
    assert {item.id for item in working_diff.added} == {item.id for item in agent.items(Tier.HOT)} - set(working)
    assert working_diff.modified == []


def test_a_restore_brings_back_the_items_the_first_flash_save_archived(store: MemoryStore, clock: FakeClock) -> None:
    agent = store.agent("worker")
    kept = set(agent.save_many([("ERROR", f"an error worth keeping {n}", 0.5) for n in range(600)]))
    first = agent.flash_save()
    assert first.items_checkpointed == 600
    clock.advance(days=90)  # left alone, the checkpointed items turn COLD
    agent.update_tiers()
    backlog = set(agent.save_many([("CODE", f"old code {n}", 0.05) for n in range(600)], loaded=False))
    assert {item.id for item in agent.items(Tier.COLD)} == kept | backlog

    second = agent.flash_save()
    assert second.items_archived == 1200
    assert agent.stats().archived_count == 1200

    restored = agent.restore(first.checkpoint_id)
    assert {item.id for item in restored.items} == kept
    assert {item.id for item in agent.working_set()} == kept
    assert {item.id for item in agent.items(Tier.COLD)} == kept  # unarchived, still COLD
    assert not agent.diff(first.checkpoint_id).changed
    assert agent.stats().archived_count == 600
    [used] = agent.use([min(backlog)])  # using an archived item brings it back too
    assert not used.archived
    assert used.loaded
    assert agent.stats().archived_count == 599
    assert {item.id for item in agent.items(archived=True) if item.archived} == backlog - {used.id}


# (a store of that layout predates the version table, so it has none)
_EARLIER_LAYOUT = (
    "DROP TABLE context_schema",
    "DROP INDEX ix_context_items_active",
    "DROP INDEX ix_context_items_agent",
    "CREATE INDEX ix_context_items_tier ON context_items (agent_id, archived, tier, id, tokens, content_hash)",
    "CREATE INDEX ix_context_items_revision ON context_items (agent_id, revision)",
)


def test_a_store_with_the_earlier_index_layout_moves_to_this_one(db_url: str, clock: FakeClock) -> None:
    first = MemoryStore(db_url, config=MemoryConfig(clock=clock))
    agent = first.agent("worker")
    ids = agent.save_many([("CODE", f"code {n}", score) for n, score in enumerate((0.05, 0.5, 0.9) * 10)])
    with first.write() as conn:
        for statement in _EARLIER_LAYOUT:
            conn.exec_driver_sql(statement)
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("DELETE FROM sqlite_stat1 WHERE tbl = 'context_items'")
    first.close()

    reopened = MemoryStore(db_url, config=MemoryConfig(clock=clock))
    names = {index["name"] for index in sqlalchemy.inspect(reopened.engine).get_indexes("context_items")}
    assert {"ix_context_items_active", "ix_context_items_agent", "ix_context_items_loaded"} <= names
    assert not names & {"ix_context_items_tier", "ix_context_items_revision"}
    agent = reopened.agent("worker")
    assert sorted(item.id for item in agent.items()) == sorted(ids)
    assert agent.flash_save().items_archived == 10
    assert agent.stats().archived_count == 10
    if reopened.dialect == "sqlite":  # the planner statistics of the new indexes were written
        with reopened.read() as conn:
            found = conn.exec_driver_sql("SELECT idx FROM sqlite_stat1 WHERE tbl = 'context_items'").scalars()
            assert {"ix_context_items_active", "ix_context_items_agent"} <= set(found)
    reopened.close()
