"""What a memory store is under its agents: engine, transactions, fork safety and the change feed.

One SQLAlchemy Core implementation for SQLite and PostgreSQL.

Every write of an agent runs in one transaction that first bumps the agent's row,
so writes of one agent are serialised across threads and processes on PostgreSQL
(a row lock) as on SQLite (``BEGIN IMMEDIATE``), and a flash save, a restore or a
tier update is all or nothing. Every statement filters by ``agent_id``: an agent
cannot read or change another agent's items or checkpoints, even by guessing ids.

Each transaction has a connection of its own, taken from the engine's pool, so
threads never share one mid-transaction. Reads are plain read transactions: on a
SQLite file (in WAL mode) and on PostgreSQL they see the last commit without waiting
for a writer. An in-memory SQLite database lives in its one connection, which the
store lends to one transaction at a time. A process forked from one holding a store
opens connections of its own instead of sharing its parent's.

:class:`AgentMemory` checks what it is given, opens the transaction and logs; the
statements themselves live in one module per job: saving, reading, tiers,
checkpoints and diff.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Self

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, Engine

from toolctx._database import is_read_only
from toolctx.memory._config import MemoryConfig
from toolctx.memory._feed import ChangeEvent, Feed, agent_summaries, read_revision
from toolctx.memory._migrations import create_schema
from toolctx.memory._results import AgentSummary
from toolctx.memory._schema import agents, in_memory, open_engine

__all__ = ["StoreCore"]


# Stores alive in this process, so a forked child can drop the connections it inherited.
_STORES: weakref.WeakSet[StoreCore] = weakref.WeakSet()
_FORK_HOOK = threading.Lock()
_fork_hooked = False


def _track(store: StoreCore) -> None:
    global _fork_hooked
    with _FORK_HOOK:
        _STORES.add(store)
        if not _fork_hooked and hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)
            _fork_hooked = True


def _after_fork_in_child() -> None:
    for store in list(_STORES):
        store.after_fork()


class StoreCore:
    """The database side of :class:`MemoryStore`: its engine, transactions and change feed.

    What the store's agents, its triggers and a subclass build on: :meth:`read` and
    :meth:`write` transactions, :meth:`register_agent` inside a write, :meth:`publish`
    of a change event once that write has committed, and :meth:`after_fork`, which
    the store runs by itself in a forked child.
    """

    def __init__(self, url: str | os.PathLike[str] | URL | Engine | None = None, *, config: MemoryConfig | None = None):
        if config is not None and not isinstance(config, MemoryConfig):
            raise TypeError(f"config must be a MemoryConfig, not {type(config).__name__}")
        self.config = config or MemoryConfig()
        self._owns_engine = not isinstance(url, Engine)
        self.engine = open_engine(url)
        self._shared_connection = self.dialect == "sqlite" and in_memory(self.engine.url)
        self._turn = self._new_turn()
        self._feed = Feed()
        if not is_read_only(self.engine):  # (an engine opened only to look: its tables stay as they are)
            try:
                create_schema(self.engine)
            except BaseException:
                if self._owns_engine:  # (a refused database: close its connections now, not when collected)
                    self.engine.dispose()
                raise
        _track(self)

    def _new_turn(self) -> AbstractContextManager[Any]:
        # Re-entrant, so a thread that nests a read in its own write gets SQLite's error, not a deadlock.
        return threading.RLock() if self._shared_connection else nullcontext()

    def after_fork(self) -> None:
        """In a forked child: forget the parent's pooled connections (a socket or file lock cannot be shared).

        Run by itself in every child a process holding the store forks; call it only from
        a fork handler of your own.

        An in-memory database is the child's own copy, so its one connection stays, with a
        new lock; a transaction another thread of the parent had open in it is rolled back.
        """
        self._turn = self._new_turn()
        if not self._shared_connection:
            self.engine.dispose(close=False)
            return
        raw = self.engine.raw_connection()
        try:
            if raw.driver_connection is not None and raw.driver_connection.in_transaction:
                raw.driver_connection.rollback()
        finally:
            raw.close()

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.engine.dialect.name

    def __repr__(self) -> str:
        return f"MemoryStore({self.engine.url.render_as_string(hide_password=True)!r})"

    def register_agent(self, conn: Connection, agent_id: str) -> bool:
        """Add the agent's row in the write transaction ``conn``; False if it was there.

        Another process may register the same agent at the same moment: both succeed,
        and only one gets True. Announce the agent with :meth:`publish` after the commit.
        """
        insert = postgresql.insert if self.dialect == "postgresql" else sqlite.insert
        now = self.config.clock()
        # RETURNING, not rowcount: psycopg reports -1 rows for an INSERT ... ON CONFLICT DO NOTHING.
        added = conn.execute(
            insert(agents)
            .values(agent_id=agent_id, created_at=now, updated_at=now, revision=0)
            .on_conflict_do_nothing(index_elements=[agents.c.agent_id])
            .returning(agents.c.agent_id)
        ).first()
        return added is not None

    def agent_ids(self) -> list[str]:
        """Every registered agent id, sorted."""
        with self.read() as conn:
            return list(conn.execute(select(agents.c.agent_id).order_by(agents.c.agent_id)).scalars())

    # -- change feed ---------------------------------------------------------

    def agents(self) -> list[AgentSummary]:
        """Every registered agent with its tier counts and tokens, archived count and last update, by id.

        One query, however many agents and items: what a dashboard lists.
        """
        with self.read() as conn:
            return agent_summaries(conn)

    def revision(self) -> int:
        """The store's revision: it grows with every committed write, from any process.

        Poll it to learn that something changed (then read :meth:`agents` or an agent's
        items); equal values mean nothing was written in between. On PostgreSQL each
        write also sends ``NOTIFY toolctx_memory, '<agent_id>'`` in its own transaction,
        so a connection that ran ``LISTEN toolctx_memory`` hears of it when it commits.
        """
        with self.read() as conn:
            return read_revision(conn)

    def subscribe(self, callback: Callable[[ChangeEvent], object]) -> Callable[[], None]:
        """Call ``callback(event)`` after every write made through this store; returns the unsubscribe function.

        An event is a dict with ``"event"`` (``"registered"``, ``"saved"``, ``"deleted"``,
        ``"tiers_updated"``, ``"flash_saved"``, ``"restored"`` or ``"archived"``), ``"agent_id"``, ``"revision"``
        (the store's :meth:`revision` after the write) and what the write changed: ``"item_ids"``
        for saves, deletions and archiving, the result's fields for tier updates, flash saves
        and restores, and ``"trigger"`` when an automatic trigger made the write.
        ``"registered"`` comes from :meth:`agent` adding an agent; an agent added by its first
        write (``create_on_write``) is announced by that write's event.
        Loading items (which counts accesses) sends no event but does change :meth:`revision`.

        Callbacks run after the commit, in the thread that wrote (a worker thread for the
        async API): keep them short, and hand the event to an event loop with
        ``loop.call_soon_threadsafe``. A callback that raises is logged and skipped.
        Writes made by other processes reach only :meth:`revision` and PostgreSQL's NOTIFY.
        """
        return self._feed.subscribe(callback)

    def publish(self, event: ChangeEvent) -> None:
        """Hand ``event`` to every :meth:`subscribe` callback, in this thread.

        Call it after the write it describes has committed (subscribers read the store
        back); a callback that raises is logged and the others still run.
        """
        self._feed.publish(event)

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction on a connection of its own: it sees the last commit and takes no write lock."""
        with self._turn, self.engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction on a connection of its own, holding SQLite's write lock from its start."""
        with self._turn, self.engine.connect().execution_options(toolctx_write=True) as conn, conn.begin():
            yield conn

    def close(self) -> None:
        """Release the store's connections (an engine passed in stays usable by its owner)."""
        if self._owns_engine:
            self.engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
