"""The tables of a session index, and the versions of their layout.

``toolctx_index_meta`` holds the layout's version. Opening an index creates the
tables on a new database, brings an older layout up to this one step by step
(each step in one transaction, under a lock on PostgreSQL, so workers starting
together upgrade it once), and refuses a layout newer than this release knows.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    select,
    text,
)
from sqlalchemy.engine import Connection, Engine

from toolctx.errors import ConfigError

__all__ = ["SCHEMA_VERSION", "calls", "create_schema", "decisions", "metadata", "schema_version", "sessions"]

SCHEMA_VERSION = 1
_LOCK = 7251883302  # (PostgreSQL advisory lock id: openers take turns creating or upgrading)

metadata = MetaData()
_Id = BigInteger().with_variant(Integer, "sqlite")  # (SQLite numbers rows itself only for INTEGER PRIMARY KEY)

meta = Table(
    "toolctx_index_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", BigInteger, nullable=False),
)

sessions = Table(
    "toolctx_sessions",
    metadata,
    Column("session_id", String(128), primary_key=True),
    Column("store", String(2048), nullable=False),  # where its payloads are (the URL), for expiry
    Column("created_ns", BigInteger, nullable=False),
    Column("used_ns", BigInteger, nullable=False),
    Column("expires_ns", BigInteger),  # used_ns + keep_for; NULL: kept until deleted
    Column("notes", Text, nullable=False, server_default=""),  # words noted about it, one per line
    Column("holder", String(64)),  # the worker holding its lease, until held_until_ns
    Column("held_until_ns", BigInteger),
)
Index("ix_toolctx_sessions_expires", sessions.c.expires_ns)

calls = Table(
    "toolctx_calls",
    metadata,
    Column("seq", _Id, primary_key=True, autoincrement=True),
    Column("session_id", String(128), nullable=False),
    Column("record_id", String(64), nullable=False),
    Column("task", String(512)),  # the call's identity: its conversation (task) and framework call id
    Column("call_id", String(512)),
    Column("entry", LargeBinary, nullable=False),  # the manifest line (JSON) of the stored call
    UniqueConstraint("session_id", "record_id", name="uq_toolctx_calls_record"),
)
Index("ix_toolctx_calls_identity", calls.c.session_id, calls.c.task, calls.c.call_id)

decisions = Table(
    "toolctx_decisions",
    metadata,
    Column("session_id", String(128), nullable=False),
    Column("scope", String(512), nullable=False),
    Column("decided", Text, nullable=False),  # JSON: what a compactor decided to show in that scope
    Column("updated_ns", BigInteger, nullable=False),
    PrimaryKeyConstraint("session_id", "scope", name="pk_toolctx_decisions"),
)

# Upgrades from each earlier version to the next, run in order inside one transaction.
_UPGRADES: dict[int, Callable[[Connection], None]] = {}


def schema_version(conn: Connection) -> int | None:
    """The layout version of the index reached by ``conn`` (None: no index there yet)."""
    if not conn.dialect.has_table(conn, meta.name):
        return None
    found = conn.execute(select(meta.c.value).where(meta.c.key == "version")).scalar()
    return None if found is None else int(found)


def create_schema(engine: Engine, *, upgrade: bool = True) -> int:
    """Create or upgrade the index's tables; returns the version found before (0 for a new database).

    Refuses (:class:`~toolctx.ConfigError`) a layout newer than this release's, and
    an older one when ``upgrade=False``.
    """
    with engine.connect().execution_options(toolctx_write=True) as conn, conn.begin():
        if engine.dialect.name == "postgresql":
            conn.execute(text(f"SELECT pg_advisory_xact_lock({_LOCK})"))
        found = schema_version(conn)
        if found is None:
            metadata.create_all(conn, checkfirst=True)
            conn.execute(meta.insert().values(key="version", value=SCHEMA_VERSION))
            return 0
        if found > SCHEMA_VERSION:
            raise ConfigError(
                f"the session index at {engine.url.render_as_string()!r} has layout version {found}, newer than "
                f"this toolctx knows ({SCHEMA_VERSION}); upgrade toolctx on this worker"
            )
        if found < SCHEMA_VERSION and not upgrade:
            raise ConfigError(
                f"the session index at {engine.url.render_as_string()!r} has layout version {found}; "
                f"open it with upgrade=True to bring it to version {SCHEMA_VERSION}"
            )
        for version in range(found, SCHEMA_VERSION):
            _UPGRADES[version](conn)
        if found < SCHEMA_VERSION:
            conn.execute(meta.update().where(meta.c.key == "version").values(value=SCHEMA_VERSION))
        return found
