"""Several processes on one database, and a restart: on SQLite and on PostgreSQL."""

from __future__ import annotations

import multiprocessing
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
from sqlalchemy import select

from toolctx._database import _use_wal
from toolctx.memory import MemoryStore, Tier
from toolctx.memory._schema import checkpoints


def _save_items(url: str, agent_id: str, count: int) -> list[int]:
    with MemoryStore(url) as store:
        agent = store.agent(agent_id)
        return [agent.save("CODE" if n % 2 else "TASK", f"{agent_id} item {n}").id for n in range(count)]


def _flash_save(url: str, barrier: multiprocessing.synchronize.Barrier) -> int:
    with MemoryStore(url) as store:
        agent = store.agent("shared")
        barrier.wait()
        return agent.flash_save().checkpoint_id


def _open_at_once(url: str, barrier: multiprocessing.synchronize.Barrier) -> str:
    barrier.wait()
    try:
        with MemoryStore(url) as store:
            store.agent("a").save("TASK", "opened together")
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def test_processes_opening_a_new_sqlite_store_at_the_same_moment_all_open_it(tmp_path: Path) -> None:
    # Switching a new database to WAL needs it to itself, and SQLite refuses at once (no busy
    # timeout) while another process is switching it: every opener must wait its turn instead.
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(6) as pool:
        for round_ in range(3):
            url = f"sqlite:///{tmp_path / f'memory-{round_}.db'}"
            barrier = manager.Barrier(6)
            assert pool.starmap(_open_at_once, [(url, barrier)] * 6) == ["ok"] * 6
            with MemoryStore(url) as store:
                assert store.agent("a", create=False).stats().total_items == 6


class _SwitchingElsewhere:
    """A cursor on a database another process is switching to WAL: refused twice, then done by it."""

    def __init__(self) -> None:
        self.refusals = 2
        self.mode = "delete"

    def execute(self, sql: str) -> _SwitchingElsewhere:
        if sql == "PRAGMA journal_mode=WAL":
            if self.refusals:
                self.refusals -= 1
                raise sqlite3.OperationalError("database is locked")
            self.mode = "wal"
        return self

    def fetchone(self) -> tuple[str]:
        return (self.mode,)


def test_a_store_opening_while_another_switches_the_database_to_wal_waits_its_turn() -> None:
    cursor = _SwitchingElsewhere()
    _use_wal(cursor)
    assert cursor.mode == "wal"
    assert cursor.refusals == 0


def test_processes_saving_at_once_lose_nothing(db_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        results = pool.starmap(_save_items, [(db_url, f"agent-{n % 2}", 40) for n in range(4)])
    ids = [item_id for batch in results for item_id in batch]
    assert len(ids) == len(set(ids)) == 160
    with MemoryStore(db_url) as store:
        for name in ("agent-0", "agent-1"):
            stats = store.agent(name, create=False).stats()
            assert stats.total_items == 80
            assert stats.working_items == 80


def test_two_processes_flash_saving_one_agent_take_turns(db_url: str) -> None:
    with MemoryStore(db_url) as store:
        agent = store.agent("shared")
        agent.save_many([("TASK", f"task {n}") for n in range(300)])
        agent.save_many([("ERROR", f"error {n}") for n in range(300)])
        agent.save_many([("TEST_RESULT", f"old run {n}", 0.1) for n in range(300)])
    context = multiprocessing.get_context("spawn")
    barrier = context.Manager().Barrier(2)
    with context.Pool(2) as pool:
        ids = pool.starmap(_flash_save, [(db_url, barrier), (db_url, barrier)])
    assert len(set(ids)) == 2
    with MemoryStore(db_url) as store:
        agent = store.agent("shared", create=False)
        first, second = sorted(agent.checkpoints(), key=lambda c: c.id)
        # The first saw the whole working set; the second, the HOT items the first left.
        assert (first.item_count, first.items_archived, first.hot_items_retained) == (600, 300, 300)
        assert (second.item_count, second.items_archived, second.hot_items_retained) == (300, 0, 300)
        with store.read() as conn:
            payloads = conn.execute(select(checkpoints.c.item_count, checkpoints.c.payload)).all()
        for count, payload in payloads:
            assert len(orjson.loads(payload)) == count  # no partial checkpoint
        stats = agent.stats()
        assert stats.total_items == 900  # nothing lost
        assert (stats.hot_count, stats.warm_count, stats.cold_count, stats.archived_count) == (300, 300, 300, 300)
        assert {item.tier for item in agent.working_set()} == {Tier.HOT}


def test_a_new_process_reads_what_an_old_one_wrote(db_url: str) -> None:
    write = textwrap.dedent(
        """
        import sys
        from toolctx.memory import MemoryStore
        with MemoryStore(sys.argv[1]) as store:
            agent = store.agent("worker")
            agent.save("TASK", "survive a restart")
            agent.save("ERROR", "and this error")
            print(agent.flash_save().checkpoint_id)
        """
    )
    read = textwrap.dedent(
        """
        import sys
        from toolctx.memory import MemoryStore
        with MemoryStore(sys.argv[1]) as store:
            agent = store.agent("worker", create=False)
            print(",".join(item.content for item in agent.load()))
            print(",".join(item.content for item in agent.restore(int(sys.argv[2])).items))
        """
    )
    checkpoint = subprocess.run(
        [sys.executable, "-c", write, db_url], check=True, capture_output=True, text=True
    ).stdout.strip()
    out = subprocess.run(
        [sys.executable, "-c", read, db_url, checkpoint], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    assert out == ["survive a restart", "survive a restart,and this error"]
