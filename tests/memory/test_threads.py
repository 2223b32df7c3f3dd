"""Many threads on one store, and processes forked from one: on every kind of URL a store accepts."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import StaticPool

from toolctx.errors import ConfigError
from toolctx.memory import AgentMemory, MemoryStore, _saving

THREADS = 8
T = TypeVar("T")


def _at_once(work: Callable[[int], T], threads: int = THREADS) -> list[T]:
    """``work(n)`` in ``threads`` threads released together; their results in order, their errors raised."""
    barrier = threading.Barrier(threads)

    def run(n: int) -> T:
        barrier.wait()
        return work(n)

    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(run, n) for n in range(threads)]
        return [future.result() for future in futures]


def test_threads_saving_at_once_lose_nothing_and_share_no_id(any_url: str) -> None:
    per_thread = 40
    with MemoryStore(any_url) as store:

        def save(n: int) -> list[tuple[int, str]]:
            agent = store.agent(f"agent-{n % 2}")
            saved = []
            for i in range(per_thread):
                content = f"thread {n} item {i}"
                item = agent.save("CODE" if i % 2 else "TASK", content)
                assert agent.get(item.id).content == content  # each thread reads back its own write at once
                saved.append((item.id, content))
            return saved

        saved = [pair for batch in _at_once(save) for pair in batch]
        ids = [item_id for item_id, _content in saved]
        assert len(ids) == len(set(ids)) == THREADS * per_thread
        for name in ("agent-0", "agent-1"):
            agent = store.agent(name, create=False)
            assert agent.stats().total_items == THREADS // 2 * per_thread
            assert len(agent.items()) == THREADS // 2 * per_thread
        stored = {item.id: item.content for name in store.agent_ids() for item in store.agent(name).items()}
        assert stored == dict(saved)


def test_threads_mixing_every_operation_keep_the_store_consistent(any_url: str) -> None:
    rounds = 6
    with MemoryStore(any_url) as store:
        agent = store.agent("shared")
        first = agent.save_many([("TASK", f"seed {n}") for n in range(20)])

        def mixed(n: int) -> int:
            flash_saves = 0
            for r in range(rounds):
                agent.save_many([("ERROR", f"{n}-{r}-a"), ("TEST_RESULT", f"{n}-{r}-b", 0.1)])
                step = (n + r) % 4
                if step == 0:
                    agent.update_tiers()
                elif step == 1:
                    agent.load("WARM", limit=5)
                elif step == 2:
                    agent.flash_save()
                    flash_saves += 1
                else:
                    agent.update(first[n], f"seed {n}, revised in round {r}")
                agent.diff(agent.snapshot(None))
                agent.stats()
            return flash_saves

        flash_saves = sum(_at_once(mixed))
        stats = agent.stats()
        assert stats.total_items == 20 + THREADS * rounds * 2
        assert stats.checkpoints == len(agent.checkpoints()) == flash_saves
        every = agent.items(archived=True)
        assert len(every) == len({item.id for item in every}) == stats.total_items
        for n in range(THREADS):  # each thread revised only its own seed item; the last revision stands
            last = max(r for r in range(rounds) if (n + r) % 4 == 3)
            assert agent.get(first[n]).content == f"seed {n}, revised in round {last}"


def test_an_in_memory_engine_must_keep_one_connection() -> None:
    per_thread_databases = create_engine("sqlite://")
    with pytest.raises(ConfigError, match=r"SingletonThreadPool.*poolclass=StaticPool.*'sqlite://'"):
        MemoryStore(per_thread_databases)
    per_thread_databases.dispose()
    one = create_engine("sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False})
    with MemoryStore(one) as store:
        agent = store.agent("a")
        ids = _at_once(lambda n: [agent.save("TASK", f"{n}.{i}").id for i in range(20)])
        assert len({i for batch in ids for i in batch}) == THREADS * 20
    one.dispose()


def _in_child(work: Callable[[], bool]) -> int:
    """Run ``work`` in a forked child; its exit status (0 when it returned True)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which never returns to pytest
        try:
            code = 0 if work() else 1
        except BaseException:
            code = 2
        os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX only")
def test_a_forked_process_uses_connections_of_its_own(any_url: str) -> None:
    with MemoryStore(any_url) as store:
        agent = store.agent("worker")
        agent.save("TASK", "before the fork")
        # Another thread is mid-transaction when the process forks.
        inside, release = threading.Event(), threading.Event()

        def hold_a_transaction() -> None:
            with store.read() as conn:
                conn.execute(text("SELECT 1"))
                inside.set()
                release.wait()

        holder = threading.Thread(target=hold_a_transaction)
        holder.start()
        inside.wait()
        try:

            def child() -> bool:
                # Nothing the parent pooled is reused; the in-memory database is the child's own copy.
                inherited = 0 if store._shared_connection else store.engine.pool.checkedin()
                saved = agent.save("TASK", "from the child")
                return inherited == 0 and agent.get(saved.id).content == "from the child"

            assert _in_child(child) == 0
        finally:
            release.set()
            holder.join()
        agent.save("TASK", "after the fork")
        contents = {item.content for item in agent.items()}
        assert {"before the fork", "after the fork"} <= contents
        # The child wrote to the same database, unless that database lived in the parent's memory.
        assert ("from the child" in contents) == (not store._shared_connection)


def test_reads_answer_while_another_connection_holds_a_write_transaction(db_url: str) -> None:
    with MemoryStore(db_url) as store, MemoryStore(db_url) as other:
        agent = store.agent("worker")
        kept = agent.save("TASK", "committed")
        snapshot = agent.snapshot()
        writer = AgentMemory(other, "worker")
        with writer._write() as write:  # holds SQLite's write lock, or the agent's row lock
            [pending] = _saving.insert_items(write.conn, write.revision, [_row(store, "not yet committed")])

            def read_everything() -> list[object]:
                looked_up = store.agent("worker", create=False)
                return [
                    store.agent_ids(),
                    looked_up.get(kept.id).content,
                    [item.id for item in looked_up.items()],
                    [item.id for item in looked_up.working_set()],
                    looked_up.stats().total_items,
                    looked_up.checkpoints(),
                    looked_up.diff(snapshot).added,
                ]

            with ThreadPoolExecutor(1) as pool:
                # A generous guard so a regression fails instead of hanging; no timing is asserted.
                seen = pool.submit(read_everything).result(timeout=50)
        assert seen == [["worker"], "committed", [kept.id], [kept.id], 1, [], []]  # the last commit, no waiting
        assert agent.get(pending).content == "not yet committed"  # and the writer went on to commit


def _row(store: MemoryStore, content: str) -> dict[str, object]:
    return _saving.item_row(store.config, "worker", "TASK", content, None, store.config.clock(), True)
