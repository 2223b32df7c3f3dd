"""The memory store and each agent's view of it: one SQLAlchemy Core implementation for SQLite and PostgreSQL.

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
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import IntegrityError

from toolctx._checks import non_empty_text, whole_number
from toolctx._internal import DEBUG, log
from toolctx.errors import ConfigError, UnknownAgentError
from toolctx.memory import _checkpoints, _diff, _reading, _saving, _tiers
from toolctx.memory._config import MemoryConfig
from toolctx.memory._items import ContextItem, Tier
from toolctx.memory._results import (
    CheckpointInfo,
    ContextDiff,
    ContextSnapshot,
    FlashSaveResult,
    MemoryStats,
    RestoreResult,
    TierUpdateResult,
)
from toolctx.memory._rows import one_item, parse_tier
from toolctx.memory._schema import MAX_AGENT_ID, MAX_ID, agents, create_schema, in_memory, open_engine

__all__ = ["AgentMemory", "MemoryStore"]


def _positive(name: str, value: object) -> int:
    """An id or a limit: a whole number from 1 to what the database's 64-bit integers hold."""
    return whole_number(name, value, minimum=1, maximum=MAX_ID)


def _agent_id(value: object) -> str:
    """An agent id both databases can hold: text of up to 200 characters, without NUL or lone surrogates."""
    agent_id = non_empty_text("agent_id", value, max_length=MAX_AGENT_ID)
    if "\x00" in agent_id or not _encodable(agent_id):
        raise ConfigError(f"agent_id must be text without NUL characters or lone surrogates, got {agent_id!r:.80}")
    return agent_id


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# Stores alive in this process, so a forked child can drop the connections it inherited.
_STORES: weakref.WeakSet[MemoryStore] = weakref.WeakSet()
_FORK_HOOK = threading.Lock()
_fork_hooked = False


def _track(store: MemoryStore) -> None:
    global _fork_hooked
    with _FORK_HOOK:
        _STORES.add(store)
        if not _fork_hooked and hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)
            _fork_hooked = True


def _after_fork_in_child() -> None:
    for store in list(_STORES):
        store._forked()


class MemoryStore:
    """Tiered memory for any number of agents, in one SQLite file or PostgreSQL database.

    ``url`` is a path or ``sqlite:///path.db``, a ``postgresql://user:pw@host/db``
    URL, an SQLAlchemy Engine, or None for ``$TOOLCTX_MEMORY_URL`` or else
    ``~/.agent/memory.db``. Missing tables are created. Open one store per process
    (engines do not survive ``fork``) and get each agent with :meth:`agent`.
    """

    def __init__(self, url: str | os.PathLike[str] | URL | Engine | None = None, *, config: MemoryConfig | None = None):
        if config is not None and not isinstance(config, MemoryConfig):
            raise TypeError(f"config must be a MemoryConfig, not {type(config).__name__}")
        self.config = config or MemoryConfig()
        self._owns_engine = not isinstance(url, Engine)
        self.engine = open_engine(url)
        self._shared_connection = self.dialect == "sqlite" and in_memory(self.engine.url)
        self._turn = self._new_turn()
        create_schema(self.engine)
        _track(self)

    def _new_turn(self) -> AbstractContextManager[Any]:
        # Re-entrant, so a thread that nests a read in its own write gets SQLite's error, not a deadlock.
        return threading.RLock() if self._shared_connection else nullcontext()

    def _forked(self) -> None:
        """In a forked child: forget the parent's pooled connections (a socket or file lock cannot be shared).

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

    def agent(self, agent_id: str, *, create: bool = True) -> AgentMemory:
        """The memory of ``agent_id``, registering the agent unless ``create=False``.

        With ``create=False`` an agent that has never been registered raises
        :class:`~toolctx.errors.UnknownAgentError` (the HTTP API reads this way).
        """
        _agent_id(agent_id)
        with self.read() as conn:
            known = conn.execute(select(agents.c.agent_id).where(agents.c.agent_id == agent_id)).first() is not None
        if not known:
            if not create:
                raise UnknownAgentError(f"no agent {agent_id!r} in this memory store; save an item for it first")
            with self.write() as conn:
                self._register(conn, agent_id)
        return AgentMemory(self, agent_id)

    def _register(self, conn: Connection, agent_id: str) -> None:
        # Another process may register the same agent at the same moment: the first insert wins.
        insert = postgresql.insert if self.dialect == "postgresql" else sqlite.insert
        conn.execute(
            insert(agents)
            .values(agent_id=agent_id, created_at=self.config.clock(), revision=0)
            .on_conflict_do_nothing(index_elements=[agents.c.agent_id])
        )

    def agents(self) -> list[str]:
        """Every registered agent id, sorted."""
        with self.read() as conn:
            return list(conn.execute(select(agents.c.agent_id).order_by(agents.c.agent_id)).scalars())

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

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class AgentMemory:
    """One agent's items, tiers, working set and checkpoints. Get it from :meth:`MemoryStore.agent`.

    The working set is what the agent currently holds in its context: items it saved
    and items it loaded, until a flash save cuts it back to HOT. It is recorded in the
    database, so another process (or the HTTP API) sees the same working set.
    """

    def __init__(self, store: MemoryStore, agent_id: str, *, create_on_write: bool = False):
        """``create_on_write=True`` registers an unknown agent in its first write's transaction.

        So a refused save (an unknown type, empty content) registers nothing; without
        it, writes of an agent that is not registered raise UnknownAgentError.
        """
        self.store = store
        self.agent_id = _agent_id(agent_id)
        self.config = store.config
        self._create_on_write = create_on_write

    def __repr__(self) -> str:
        return f"AgentMemory({self.agent_id!r}, {self.store!r})"

    @contextmanager
    def _write(self) -> Iterator[tuple[Connection, int]]:
        """A write transaction holding this agent's lock (see the module docstring), and its revision.

        Every item row a write changes in a way a snapshot would see records the write's
        revision, so :meth:`diff` needs to read only the rows newer than its snapshot.
        """
        with self.store.write() as conn:
            revision = self._bump(conn)
            if revision is None and self._create_on_write:
                self.store._register(conn, self.agent_id)
                revision = self._bump(conn)
            if revision is None:
                raise UnknownAgentError(f"no agent {self.agent_id!r} in this memory store")
            yield conn, revision

    def _bump(self, conn: Connection) -> int | None:
        revision: int | None = conn.execute(
            update(agents)
            .where(agents.c.agent_id == self.agent_id)
            .values(revision=agents.c.revision + 1)
            .returning(agents.c.revision)
        ).scalar_one_or_none()
        return revision

    # -- saving ------------------------------------------------------------

    def save(
        self, item_type: str, content: str, *, importance_score: float | None = None, loaded: bool = True
    ) -> ContextItem:
        """Store one item and return it with its id and tier.

        Without ``importance_score`` the item's base importance is its type's weight;
        with one, that score is the item's own base importance, which then decays with
        age like any other. ``loaded=True`` puts the item in the working set (the agent
        has it in context, since it just produced it).
        """
        row = _saving.item_row(
            self.config, self.agent_id, item_type, content, importance_score, self.config.clock(), loaded
        )
        with self._write() as (conn, revision):
            [item_id] = _saving.insert_items(conn, revision, [row])
        log(DEBUG, "memory_saved", agent=self.agent_id, id=item_id, item_type=item_type, tier=row["tier"])
        return _saving.saved_item(item_id, row)

    def save_many(
        self, entries: Iterable[tuple[str, str] | tuple[str, str, float | None]], *, loaded: bool = True
    ) -> list[int]:
        """Store many ``(item_type, content[, importance_score])`` entries in one transaction; their ids in order.

        Every entry is checked before anything is written: one bad entry stores none.
        """
        now = self.config.clock()
        rows = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, tuple) or len(entry) not in (2, 3):
                raise ConfigError(f"entry {index} must be (item_type, content[, importance_score]), not {entry!r:.80}")
            score = entry[2] if len(entry) == 3 else None
            rows.append(_saving.item_row(self.config, self.agent_id, entry[0], entry[1], score, now, loaded))
        if not rows:
            return []
        with self._write() as (conn, revision):
            ids = _saving.insert_items(conn, revision, rows)
        log(DEBUG, "memory_saved_many", agent=self.agent_id, count=len(ids))
        return ids

    def update(self, item_id: int, content: str) -> ContextItem:
        """Replace an item's content (its hash and token estimate follow); a diff reports it as modified."""
        _positive("item_id", item_id)
        _saving.check_content(content, self.config.max_content_bytes)
        with self._write() as (conn, revision):
            return _saving.replace_content(conn, self.agent_id, revision, item_id, content)

    # -- reading -----------------------------------------------------------

    def get(self, item_id: int) -> ContextItem:
        """One item by id, without counting an access."""
        _positive("item_id", item_id)
        with self.store.read() as conn:
            return one_item(conn, self.agent_id, item_id)

    def items(
        self, tier: Tier | str | None = None, *, archived: bool = False, limit: int | None = None
    ) -> list[ContextItem]:
        """Items of a tier (or all), best first, without counting an access: for looking, not loading."""
        wanted = None if tier is None else parse_tier(tier)
        limit = None if limit is None else _positive("limit", limit)
        with self.store.read() as conn:
            return _reading.list_items(conn, self.agent_id, wanted, archived=archived, limit=limit)

    def load(self, tier: Tier | str = Tier.HOT, *, limit: int | None = None) -> list[ContextItem]:
        """Load a tier into the working set, best first; each loaded item counts one access.

        Archived items are not loaded by tier; :meth:`restore` brings them back.
        """
        wanted = parse_tier(tier)
        limit = None if limit is None else _positive("limit", limit)
        with self._write() as (conn, revision):
            loaded = _reading.load_tier(conn, self.agent_id, revision, wanted, limit=limit, now=self.config.clock())
        log(DEBUG, "memory_loaded", agent=self.agent_id, tier=wanted.value, count=len(loaded))
        return loaded

    def working_set(self) -> list[ContextItem]:
        """The items the agent currently holds in context, best first."""
        with self.store.read() as conn:
            return _reading.working_set(conn, self.agent_id)

    def stats(self) -> MemoryStats:
        """Totals, per-tier counts and tokens, the working set and the number of checkpoints."""
        with self.store.read() as conn:
            return _reading.stats(conn, self.agent_id)

    # -- scoring -----------------------------------------------------------

    def update_tiers(self) -> TierUpdateResult:
        """Rescore every unarchived item and move it to its tier; run it after each task.

        The default scorer runs inside the database as one UPDATE of the scores; a custom
        scorer reads the items, scores them in Python (vectorised when it can) and writes
        the scores back. Either way only the items whose score left their tier are then moved.
        """
        try:
            with self._write() as (conn, revision):
                result = _tiers.update_tiers(conn, self.agent_id, self.config, revision)
        except IntegrityError:
            # The database scorer gives a type missing from type_weights no weight, so
            # its score is NULL and the NOT NULL column refuses the whole update.
            with self.store.read() as conn:
                error = _tiers.unconfigured_types(conn, self.agent_id, self.config)
            if error is not None:
                raise error from None
            raise
        log(DEBUG, "memory_tiers_updated", agent=self.agent_id, **result.model_dump())
        return result

    # -- flash save and checkpoints ----------------------------------------

    def should_flash_save(self, current_tokens: int, token_limit: int) -> bool:
        """Whether ``current_tokens`` has reached ``flash_fraction`` (80%) of ``token_limit``."""
        whole_number("current_tokens", current_tokens, unit="tokens")
        whole_number("token_limit", token_limit, minimum=1, unit="tokens")
        return current_tokens >= self.config.flash_fraction * token_limit

    def flash_save(self) -> FlashSaveResult:
        """Checkpoint the working set's HOT and WARM items, archive COLD items, and resume with HOT only.

        All of it happens in one transaction: a failure leaves no checkpoint and no
        change, and two processes flash-saving one agent take turns. Tiers are those of
        the last :meth:`update_tiers`. Reloading the HOT tier counts as an access.
        """
        now = self.config.clock()
        with self._write() as (conn, revision):
            result = _checkpoints.flash_save(conn, self.agent_id, revision, now)
        log(DEBUG, "memory_flash_saved", agent=self.agent_id, **result.model_dump())
        return result

    def checkpoints(self) -> list[CheckpointInfo]:
        """This agent's checkpoints, newest first."""
        with self.store.read() as conn:
            return _checkpoints.list_checkpoints(conn, self.agent_id)

    def restore(self, checkpoint_id: int) -> RestoreResult:
        """Make the working set the items a checkpoint recorded (unarchiving any archived since).

        The returned items are as the checkpoint recorded them; the store keeps their
        current content, so :meth:`diff` against the checkpoint shows what changed since.
        """
        _positive("checkpoint_id", checkpoint_id)
        with self._write() as (conn, revision):
            recorded = _checkpoints.restore(conn, self.agent_id, revision, checkpoint_id)
        log(DEBUG, "memory_restored", agent=self.agent_id, checkpoint=checkpoint_id, count=len(recorded))
        return RestoreResult(checkpoint_id=checkpoint_id, items=recorded, tokens=sum(item.tokens for item in recorded))

    # -- diffing -----------------------------------------------------------

    def snapshot(self, tier: Tier | str | None = Tier.HOT) -> ContextSnapshot:
        """The ids and content hashes of a tier (HOT by default) or, with ``tier=None``, of the working set."""
        wanted = None if tier is None else parse_tier(tier)
        with self.store.read() as conn:
            return _diff.snapshot(conn, self.agent_id, wanted, self.config.clock())

    def diff(self, previous: ContextSnapshot | int) -> ContextDiff:
        """What changed in a context since ``previous``: a snapshot, or a checkpoint id.

        A snapshot is compared with the same tier (or the working set) now; a checkpoint
        with the working set now. Only the items written since ``previous`` are read, and
        only the added and modified ones in full. A snapshot without a revision (built by
        hand) is compared with the whole context instead.
        """
        if not isinstance(previous, ContextSnapshot):
            _positive("checkpoint_id", previous)
        with self.store.read() as conn:
            return _diff.diff(conn, self.agent_id, previous, self.config.clock())
