"""Engines for toolctx's databases (the tiered memory, the shared session index): SQLite or PostgreSQL.

A path or ``sqlite:///`` URL opens SQLite in WAL mode with a busy timeout and
``BEGIN IMMEDIATE`` for writes (so processes sharing a file queue for it instead
of deadlocking); a ``postgresql://`` URL opens PostgreSQL through psycopg 3. An
in-memory SQLite database gets one connection, lent to one thread at a time.

``read_only=True`` opens a database only to look at it: a SQLite file through a
``file:...?mode=ro`` URI with ``PRAGMA query_only`` (never created, never switched to
WAL, its bytes untouched), PostgreSQL in read-only transactions. :func:`is_read_only`
tells such an engine apart, so a store given one creates no tables.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine, event, make_url
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool

from toolctx._internal import WARNING, log
from toolctx.errors import ConfigError

__all__ = ["in_memory", "is_read_only", "open_database"]

_READ_ONLY = "toolctx_read_only"  # (the engine option that marks an engine opened to look only)
_CONFIGURED = "toolctx_configured"  # (and one opened here: its set-up is done, and must not run twice)


def _normalise(url: str | os.PathLike[str] | URL, what: str, read_only: bool = False) -> URL:
    if isinstance(url, os.PathLike) or (isinstance(url, str) and "://" not in url):
        path = Path(url).expanduser()
        if not read_only and not path.parent.is_dir():
            raise ConfigError(f"cannot create the database of {what} {str(path)!r}: its folder does not exist")
        return URL.create("sqlite+pysqlite", database=str(path))
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(f"{url!r} is not a database URL; use sqlite:///path.db or postgresql://user@host/db") from exc
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        return parsed.set(drivername="sqlite+pysqlite")
    raise ConfigError(f"{what} run on SQLite or PostgreSQL, not {backend!r} (from {parsed!r})")


def in_memory(url: URL) -> bool:
    """Whether a SQLite URL names an in-memory database: every connection to it must be the same one."""
    database = url.database or ""
    if database in ("", ":memory:"):
        return True
    if str(url.query.get("uri", "")).lower() not in ("true", "1"):
        return False
    return database.startswith("file::memory:") or url.query.get("mode") == "memory" or "mode=memory" in database


def is_read_only(engine: Engine) -> bool:
    """Whether ``engine`` was opened with ``open_database(..., read_only=True)``: to look, never to write."""
    return bool(engine.get_execution_options().get(_READ_ONLY, False))


def open_database(
    url: str | os.PathLike[str] | URL | Engine,
    what: str,
    *,
    connect_timeout: int | None = None,
    read_only: bool = False,
    busy_timeout: float = 60.0,
) -> Engine:
    """An engine for ``url``: a path or ``sqlite:///`` URL, a ``postgresql://`` URL, or an Engine.

    An in-memory SQLite database gets one connection (each new one would be another,
    empty database), which the store then lends to one thread at a time.

    ``read_only=True`` only looks (see the module): a SQLite file that does not exist
    is not created (connecting fails instead), and any write fails. ``busy_timeout``:
    seconds a SQLite connection waits for another process's lock before giving up.
    """
    if isinstance(url, Engine):
        if url.get_execution_options().get(_CONFIGURED):
            return url  # (opened here: a second set-up would begin every transaction twice)
        if url.dialect.name not in ("sqlite", "postgresql"):
            raise ConfigError(f"{what} run on SQLite or PostgreSQL, not {url.dialect.name!r}")
        if url.dialect.name == "sqlite":
            if in_memory(url.url) and not isinstance(url.pool, StaticPool):
                raise ConfigError(
                    f"the in-memory SQLite engine {url.url.render_as_string()!r} uses {type(url.pool).__name__}, "
                    "so threads would each see another database or none; create it with "
                    "poolclass=StaticPool and connect_args={'check_same_thread': False}, or pass the URL 'sqlite://'"
                )
            _configure_sqlite(url)
        return url
    if not isinstance(url, str | os.PathLike | URL):
        raise TypeError(f"{what} take a database URL, a path or an Engine, not {type(url).__name__}")
    parsed = _normalise(url, what, read_only)
    if read_only:
        return _open_read_only(parsed, what, connect_timeout, busy_timeout)
    if parsed.get_backend_name() == "postgresql":
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:
            raise ImportError(f"{what} on PostgreSQL need psycopg: pip install 'toolctx[postgres]'") from exc
        # (``connect_timeout``: seconds before an unreachable server is given up on, not the system's minutes)
        timeout = {} if connect_timeout is None else {"connect_args": {"connect_timeout": connect_timeout}}
        return create_engine(parsed, pool_pre_ping=True, execution_options={_CONFIGURED: True}, **timeout)
    kwargs: dict[str, Any] = {
        "connect_args": {"timeout": busy_timeout, "check_same_thread": False},
        "execution_options": {_CONFIGURED: True},
    }
    if in_memory(parsed):
        kwargs["poolclass"] = StaticPool  # one connection, or every checkout would see a new empty database
    engine = create_engine(parsed, **kwargs)
    _configure_sqlite(engine)
    return engine


def _open_read_only(parsed: URL, what: str, connect_timeout: int | None, busy_timeout: float) -> Engine:
    options = {_READ_ONLY: True, _CONFIGURED: True}
    if parsed.get_backend_name() == "postgresql":
        connect_args: dict[str, Any] = {"options": "-c default_transaction_read_only=on"}
        if connect_timeout is not None:
            connect_args["connect_timeout"] = connect_timeout
        return create_engine(parsed, pool_pre_ping=True, connect_args=connect_args, execution_options=options)
    if in_memory(parsed):
        raise ConfigError(f"an in-memory SQLite database has nothing to look at; pass the file of the {what}")
    database = parsed.database or ""
    if str(parsed.query.get("uri", "")).lower() in ("true", "1"):
        raise ConfigError(f"open the {what} {database!r} read-only by its path, not by a file: URI")
    # A URI, so that SQLite opens the file read-only and never creates it; the path quoted
    # so that '?' or '#' in a file name stay part of the name.
    target = f"file:{quote(str(Path(database).expanduser()), safe='/')}?mode=ro"

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(target, uri=True, timeout=busy_timeout, check_same_thread=False)

    engine = create_engine(parsed, creator=connect, execution_options=options)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        cursor.execute("PRAGMA query_only=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN")

    return engine


def _configure_sqlite(engine: Engine) -> None:
    """WAL, a busy timeout, foreign keys, and BEGIN IMMEDIATE for writes.

    pysqlite opens transactions lazily and as DEFERRED, so two processes that both
    read and then write can deadlock on the upgrade; SQLAlchemy's documented remedy is
    to let it emit BEGIN itself. Writers say IMMEDIATE and so queue for the lock up front.
    """

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=60000")
        _use_wal(cursor)
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        # 64 MiB of page cache (taken only as used) instead of 2 MiB: rescoring 100,000
        # items touches some 12 MiB of pages, and a smaller cache spills them mid-transaction.
        cursor.execute("PRAGMA cache_size=-65536")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("toolctx_write") else "BEGIN")


_WAL_WAIT = 60.0  # seconds, as long as the busy timeout


def _use_wal(cursor: Any) -> None:
    """Put the database in WAL mode (it stays so), waiting for processes opening it at the same moment.

    Switching the journal mode needs the database to itself, and SQLite answers "database
    is locked" at once, without its busy timeout, when another connection holds it: so
    several processes opening a new store together try again until one has switched it.
    """
    import sqlite3  # (only SQLite stores come here)

    deadline = time.monotonic() + _WAL_WAIT
    delay = 0.005
    while True:
        try:
            mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() in ("wal", "memory"):  # already WAL (another process), or in memory
                return
            switched = cursor.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(switched).lower() != "wal":  # a file system without shared memory, say
                log(WARNING, "sqlite_not_wal", journal_mode=str(switched), why="processes will wait on each other more")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
