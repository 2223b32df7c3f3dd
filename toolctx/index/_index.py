"""A session index: what every worker knows of the sessions kept in a shared store.

Object storage holds the payloads; it has no append and no cheap listing of one
session's entries by call. The index is a database every worker reaches (PostgreSQL
for a fleet, SQLite for one host) that holds the rest: each session's stored calls
(its manifest, one row per call, keyed by the session and the record id, found by
the call's identity: task and framework call id), the words noted about it, when
it was last used and when it expires, its lease, and the compactors' decisions.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from typing import Any

import orjson
from sqlalchemy import and_, delete, func, insert, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine

from toolctx._database import open_database
from toolctx.errors import ConfigError
from toolctx.index._schema import calls, create_schema, decisions, sessions
from toolctx.storage import display_url

__all__ = ["SessionIndex", "index_of"]

_WHAT = "session indexes"


class SessionIndex:
    """A shared index of kept sessions at ``url`` (``postgresql://...`` or ``sqlite:///path.db``).

    Thread-safe and shared by the sessions of a process (:func:`index_of` gives one
    per URL). Every method is one short transaction; nothing here holds a
    connection between calls. ``upgrade=False`` refuses to upgrade an older layout
    (the default brings it to this release's, once, whichever worker comes first).
    """

    def __init__(self, url: str | Engine, *, upgrade: bool = True) -> None:
        if isinstance(url, str) and not url.startswith(("sqlite:", "postgresql:", "postgresql+", "postgres:")):
            raise ConfigError(
                f"index must be a database URL such as 'postgresql://user@host/db' or 'sqlite:///path.db', "
                f"got {display_url(url)!r:.120}"
            )
        self.engine = open_database(url, _WHAT, connect_timeout=5)  # (an unreachable index costs a call 5 s)
        self.url = self.engine.url.render_as_string(hide_password=True)
        postgres = self.engine.dialect.name == "postgresql"
        # One statement, one round trip: no BEGIN and COMMIT around a read or a single write on PostgreSQL.
        self._auto = self.engine.execution_options(isolation_level="AUTOCOMMIT") if postgres else None
        self._insert = postgres_insert if postgres else sqlite_insert
        try:
            create_schema(self.engine, upgrade=upgrade)
        except BaseException:
            self.engine.dispose()
            raise

    def __repr__(self) -> str:
        return f"SessionIndex({self.url!r})"

    def _write(self) -> Any:
        return self.engine.connect().execution_options(toolctx_write=True)

    def _read(self) -> Any:
        return self.engine.connect() if self._auto is None else self._auto.connect()

    def _one(self, statement: Any) -> Any:
        """Run one writing statement in a transaction of its own; its result (rows counted)."""
        if self._auto is not None:
            with self._auto.connect() as conn:
                return conn.execute(statement)
        with self._write() as conn, conn.begin():
            return conn.execute(statement)

    # -- sessions -------------------------------------------------------------------------

    def exists(self, session_id: str) -> bool:
        """Whether ``session_id`` is in the index (kept, and not deleted or expired)."""
        with self._read() as conn:
            found = conn.execute(select(sessions.c.session_id).where(sessions.c.session_id == session_id))
            return found.first() is not None

    def touch(self, session_id: str, store: str, keep_for: float | None, now_ns: int | None = None) -> None:
        """Record ``session_id`` (its payloads in ``store``) as used now; it expires ``keep_for`` seconds later
        (None: never, until deleted)."""
        now = time.time_ns() if now_ns is None else now_ns
        expires = None if keep_for is None else now + int(keep_for * 1e9)
        row = {"session_id": session_id, "store": store, "created_ns": now, "used_ns": now, "expires_ns": expires}
        statement = self._insert(sessions).values(**row)
        self._one(
            statement.on_conflict_do_update(
                index_elements=[sessions.c.session_id], set_={"used_ns": now, "expires_ns": expires, "store": store}
            )
        )

    def note(self, session_id: str, word: str) -> None:
        """Remember ``word`` about ``session_id`` (which must be recorded: :meth:`touch`)."""
        with self._write() as conn, conn.begin():
            found = conn.execute(
                select(sessions.c.notes).where(sessions.c.session_id == session_id).with_for_update()
            ).scalar()
            if found is None or word in found.split("\n"):
                return
            conn.execute(update(sessions).where(sessions.c.session_id == session_id).values(notes=f"{found}{word}\n"))

    def noted(self, session_id: str, word: str) -> bool:
        with self._read() as conn:
            found = conn.execute(select(sessions.c.notes).where(sessions.c.session_id == session_id)).scalar()
        return found is not None and word in found.split("\n")

    def expired(self, now_ns: int | None = None, *, limit: int = 1000) -> list[tuple[str, str]]:
        """Up to ``limit`` sessions whose time is up, oldest first: (session id, store URL)."""
        now = time.time_ns() if now_ns is None else now_ns
        query = (
            select(sessions.c.session_id, sessions.c.store)
            .where(sessions.c.expires_ns < now)
            .order_by(sessions.c.expires_ns)
            .limit(limit)
        )
        with self._read() as conn:
            return [(row[0], row[1]) for row in conn.execute(query)]

    def known(self, session_ids: Iterable[str]) -> set[str]:
        """Which of ``session_ids`` the index holds."""
        wanted = list(session_ids)
        found: set[str] = set()
        with self._read() as conn:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                found.update(
                    conn.execute(select(sessions.c.session_id).where(sessions.c.session_id.in_(chunk))).scalars()
                )
        return found

    def count(self) -> int:
        """How many sessions the index holds."""
        with self._read() as conn:
            return int(conn.execute(select(func.count()).select_from(sessions)).scalar() or 0)

    def forget_all(self, session_ids: list[str]) -> None:
        """:meth:`forget` for many sessions, in one transaction per 500."""
        for start in range(0, len(session_ids), 500):
            chunk = session_ids[start : start + 500]
            with self._write() as conn, conn.begin():
                for table in (calls, decisions, sessions):
                    conn.execute(delete(table).where(table.c.session_id.in_(chunk)))

    def files(self, session_ids: list[str]) -> dict[str, list[str]]:
        """The names of the payloads listed for each of ``session_ids``."""
        found: dict[str, list[str]] = {}
        with self._read() as conn:
            for start in range(0, len(session_ids), 500):
                query = select(calls.c.session_id, calls.c.entry).where(
                    calls.c.session_id.in_(session_ids[start : start + 500])
                )
                for session_id, entry in conn.execute(query):
                    name = orjson.loads(entry).get("file")
                    if isinstance(name, str):
                        found.setdefault(session_id, []).append(name)
        return found

    def forget(self, session_id: str) -> bool:
        """Delete everything the index holds of ``session_id``; False if it held nothing."""
        with self._write() as conn, conn.begin():
            for table in (calls, decisions):
                conn.execute(delete(table).where(table.c.session_id == session_id))
            return bool(conn.execute(delete(sessions).where(sessions.c.session_id == session_id)).rowcount)

    # -- stored calls (the manifest) ------------------------------------------------------

    def add(self, session_id: str, entry: bytes, *, record_id: str, task: str | None, call_id: str | None) -> None:
        """List one stored call of ``session_id`` (its manifest line); listing it again changes nothing."""
        row = {"session_id": session_id, "record_id": record_id, "task": task, "call_id": call_id, "entry": entry}
        # (listed already, by a spill listing again what a save listed: the first row stands)
        self._one(self._insert(calls).values(**row).on_conflict_do_nothing(index_elements=["session_id", "record_id"]))

    def replace(self, session_id: str, entries: list[tuple[bytes, str, str | None, str | None]]) -> None:
        """List exactly ``entries`` (line, record id, task, call id) for ``session_id``, in order."""
        rows = [
            {"session_id": session_id, "entry": e, "record_id": r, "task": t, "call_id": c} for e, r, t, c in entries
        ]
        with self._write() as conn, conn.begin():
            conn.execute(delete(calls).where(calls.c.session_id == session_id))
            if rows:
                conn.execute(insert(calls), rows)

    def entries(self, session_id: str) -> list[bytes]:
        """The manifest lines of ``session_id``, in the order they were listed."""
        query = select(calls.c.entry).where(calls.c.session_id == session_id).order_by(calls.c.seq)
        with self._read() as conn:
            return [bytes(row[0]) for row in conn.execute(query)]

    def identified(self, session_id: str, task: str | None, call_id: str) -> list[bytes]:
        """The manifest lines of the calls of ``session_id`` with this task and framework call id, oldest first."""
        same_task = calls.c.task.is_(None) if task is None else calls.c.task == task
        query = (
            select(calls.c.entry)
            .where(and_(calls.c.session_id == session_id, same_task, calls.c.call_id == call_id))
            .order_by(calls.c.seq)
        )
        with self._read() as conn:
            return [bytes(row[0]) for row in conn.execute(query)]

    # -- leases ----------------------------------------------------------------------------

    def take(self, session_id: str, holder: str, seconds: float, now_ns: int | None = None) -> str | None:
        """Hold ``session_id`` for ``seconds`` as ``holder`` (taking it over if its lease ran out, or renewing
        it if ``holder`` has it); returns None then, else the holder that has it."""
        now = time.time_ns() if now_ns is None else now_ns
        free = or_(sessions.c.holder.is_(None), sessions.c.held_until_ns < now, sessions.c.holder == holder)
        changed = self._one(
            update(sessions)
            .where(and_(sessions.c.session_id == session_id, free))
            .values(holder=holder, held_until_ns=now + int(seconds * 1e9))
        )
        if changed.rowcount:
            return None
        with self._read() as conn:
            found = conn.execute(select(sessions.c.holder).where(sessions.c.session_id == session_id)).scalar()
        if found is None:
            raise KeyError(session_id)  # (not recorded: touch() it first)
        return str(found)

    def holder(self, session_id: str, now_ns: int | None = None) -> str | None:
        """Who holds the lease of ``session_id`` now (None: nobody, or a lease that ran out)."""
        now = time.time_ns() if now_ns is None else now_ns
        query = select(sessions.c.holder).where(
            and_(sessions.c.session_id == session_id, sessions.c.held_until_ns >= now)
        )
        with self._read() as conn:
            found = conn.execute(query).scalar()
        return None if found is None else str(found)

    def take_all(self, session_ids: list[str], holder: str, seconds: float) -> list[str]:
        """:meth:`take` for many sessions in one statement per 500; the ids taken."""
        now = time.time_ns()
        free = or_(sessions.c.holder.is_(None), sessions.c.held_until_ns < now, sessions.c.holder == holder)
        taken: list[str] = []
        for start in range(0, len(session_ids), 500):
            chunk = session_ids[start : start + 500]
            statement = (
                update(sessions)
                .where(and_(sessions.c.session_id.in_(chunk), free))
                .values(holder=holder, held_until_ns=now + int(seconds * 1e9))
                .returning(sessions.c.session_id)
            )
            with self._write() as conn, conn.begin():
                taken += [str(row[0]) for row in conn.execute(statement)]
        return taken

    def release(self, session_id: str, holder: str) -> bool:
        """Give up ``holder``'s lease on ``session_id``; False if it did not hold it (any more)."""
        changed = self._one(
            update(sessions)
            .where(and_(sessions.c.session_id == session_id, sessions.c.holder == holder))
            .values(holder=None, held_until_ns=None)
        )
        return bool(changed.rowcount)

    # -- compaction decisions -----------------------------------------------------------

    def decided(self, session_id: str, scope: str) -> str | None:
        """What was decided in ``scope`` of ``session_id``, as it was stored (None: nothing yet)."""
        query = select(decisions.c.decided).where(
            and_(decisions.c.session_id == session_id, decisions.c.scope == scope)
        )
        with self._read() as conn:
            found = conn.execute(query).scalar()
        return None if found is None else str(found)

    def state(self, session_id: str) -> tuple[set[str], dict[str, str]] | None:
        """The words noted about ``session_id`` and what was decided in each of its scopes, in one query (None:
        no such session)."""
        query = (
            select(sessions.c.notes, decisions.c.scope, decisions.c.decided)
            .select_from(sessions.outerjoin(decisions, decisions.c.session_id == sessions.c.session_id))
            .where(sessions.c.session_id == session_id)
        )
        with self._read() as conn:
            rows = conn.execute(query).all()
        if not rows:
            return None
        words = {word for word in str(rows[0][0]).split("\n") if word}
        return words, {str(scope): str(decided) for _, scope, decided in rows if scope is not None}

    def decide(self, session_id: str, scope: str, text: str, now_ns: int | None = None) -> None:
        """Store what was decided in ``scope`` of ``session_id`` (JSON text, say), replacing what was there."""
        now = time.time_ns() if now_ns is None else now_ns
        statement = self._insert(decisions).values(session_id=session_id, scope=scope, decided=text, updated_ns=now)
        self._one(
            statement.on_conflict_do_update(
                index_elements=[decisions.c.session_id, decisions.c.scope], set_={"decided": text, "updated_ns": now}
            )
        )

    def close(self) -> None:
        """Close the index's connections (a later call opens new ones)."""
        self.engine.dispose()


_INDEXES: dict[str, SessionIndex] = {}
_INDEXES_LOCK = threading.Lock()


def index_of(index: str | SessionIndex | None) -> SessionIndex | None:
    """The index ``index`` names: one :class:`SessionIndex` per URL in a process (None: ``TOOLCTX_INDEX``, or no
    index)."""
    if index is None:
        index = os.environ.get("TOOLCTX_INDEX") or None
    if index is None or isinstance(index, SessionIndex):
        return index
    if not isinstance(index, str):
        raise ConfigError(
            f"index must be a database URL such as 'postgresql://user@host/db' or a SessionIndex, "
            f"got {type(index).__name__}"
        )
    with _INDEXES_LOCK:
        found = _INDEXES.get(index)
        if found is None:
            found = _INDEXES[index] = SessionIndex(index)
        return found


def _after_fork() -> None:
    """A forked child opens its own connections: the parent's stay the parent's."""
    global _INDEXES_LOCK
    _INDEXES_LOCK = threading.Lock()
    for found in list(_INDEXES.values()):
        found.engine.dispose(close=False)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
