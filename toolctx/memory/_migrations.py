"""Schema versions of a memory store: the version table, and each upgrade from an earlier layout.

``context_schema`` holds one row per layout the database has been brought to (its
number, when, and what it changed); the highest number is the database's version.
Opening a store reads it without a lock. Only when it is behind does the store take
the database's write lock (``BEGIN IMMEDIATE`` on SQLite; a transaction-level
advisory lock on PostgreSQL), read it again and run the missing steps inside that
one transaction; both databases run DDL inside a transaction, so two processes
opening an old database at once upgrade it once, and a step that fails leaves the
database as it was. A database newer than this release is refused, not touched.

The versions, from the layouts in the store's history:

1. item text in ``context_contents``, one row per item and content hash; checkpoints
   record content hashes;
2. ``context_meta`` (the store's revision) and ``context_agents.updated_at``: the change feed;
3. ``context_agents.steps``, ``context_items.last_step`` and ``pinned``: recency in steps;
4. ``context_deleted``: deletions a diff reports;
5. the item indexes of today: the tier index holds only unarchived items, the agent
   index is keyed by revision (and, on SQLite, id), the working-set index is partial.

A database made before the version table existed has no row: its version is read
from its tables, columns and indexes, once, and written down.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import func, insert, select, text
from sqlalchemy.engine import Connection, Engine

from toolctx.errors import ConfigError
from toolctx.memory._schema import (
    SCHEMA_VERSION,
    deleted,
    items,
    meta,
    metadata,
    schema_versions,
    tune_planner,
)

__all__ = ["create_schema", "schema_version"]

_LOCK = 7251883301  # PostgreSQL advisory lock key: concurrent creators and upgraders take turns


def schema_version(conn: Connection) -> int | None:
    """The version recorded in the database of ``conn``; None if it has no version table."""
    if not conn.dialect.has_table(conn, schema_versions.name):
        return None
    found = conn.execute(select(func.max(schema_versions.c.version))).scalar()
    return None if found is None else int(found)


def create_schema(engine: Engine) -> None:
    """Create the tables of a new store, or bring an older one up to :data:`SCHEMA_VERSION`.

    A current database costs one read and takes no lock. Raises
    :class:`~toolctx.ConfigError` for a database written by a newer toolctx, or one in
    a layout no release can upgrade.
    """
    with engine.connect() as conn, conn.begin():
        found = schema_version(conn)
    if found is not None:
        _refuse_newer(engine, found)
        if found == SCHEMA_VERSION:
            return
    with engine.connect().execution_options(toolctx_write=True) as conn, conn.begin():
        if engine.dialect.name == "postgresql":
            # DDL is transactional on PostgreSQL; the lock makes concurrent creators take turns.
            conn.execute(text(f"SELECT pg_advisory_xact_lock({_LOCK})"))
        found = schema_version(conn)  # again, under the lock: another process may have done it
        if found is None:
            if not conn.dialect.has_table(conn, items.name):
                metadata.create_all(conn, checkfirst=True)
                _seed_revision(conn)
                tune_planner(conn)
                _record(conn, SCHEMA_VERSION, "created")
                return
            found = _legacy_version(engine, conn)
            schema_versions.create(conn)
            _record(conn, found, "layout found before the version table")
        _refuse_newer(engine, found)
        for version in range(found + 1, SCHEMA_VERSION + 1):
            description, step = _STEPS[version]
            step(conn)
            _record(conn, version, description)


def _record(conn: Connection, version: int, description: str) -> None:
    conn.execute(insert(schema_versions).values(version=version, applied_at=time.time(), description=description))


def _refuse_newer(engine: Engine, found: int) -> None:
    if found > SCHEMA_VERSION:
        raise ConfigError(
            f"the memory database {engine.url.render_as_string()!r} has schema version {found}, newer than "
            f"this toolctx knows ({SCHEMA_VERSION}): a newer toolctx upgraded it. Upgrade toolctx here "
            "(pip install -U toolctx), or point this process at another database"
        )


def _columns(conn: Connection, table: str) -> set[str]:
    if conn.dialect.name == "postgresql":
        query = (
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %(t)s"
        )
        return {row[0] for row in conn.exec_driver_sql(query, {"t": table})}
    return {row[1] for row in conn.exec_driver_sql(f"PRAGMA table_info({table})")}


def _index_definitions(conn: Connection) -> dict[str, str]:
    """The CREATE INDEX text of each index of ``context_items``, by name."""
    if conn.dialect.name == "postgresql":
        query = "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = %(t)s"
        rows = conn.exec_driver_sql(query, {"t": items.name})
    else:
        rows = conn.exec_driver_sql(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
            (items.name,),
        )
    return {str(name): " ".join(str(sql).lower().split()) for name, sql in rows}


def _legacy_version(engine: Engine, conn: Connection) -> int:
    """The version of a database made before the version table, read from its layout."""
    item_columns = _columns(conn, items.name)
    if "content" in item_columns or not conn.dialect.has_table(conn, "context_contents"):
        raise ConfigError(
            f"the memory database {engine.url.render_as_string()!r} keeps item text in context_items, the "
            "layout of toolctx's first memory store, which no upgrade reads (its checkpoints hold the text in "
            "another form); start a new database, saving what you need from the old one with its own toolctx"
        )
    agent_columns = _columns(conn, "context_agents")
    if "updated_at" not in agent_columns or not conn.dialect.has_table(conn, meta.name):
        return 1
    if "steps" not in agent_columns or not {"last_step", "pinned"} <= item_columns:
        return 2
    if not conn.dialect.has_table(conn, deleted.name):
        return 3
    indexes = _index_definitions(conn)
    agent_index = indexes.get("ix_context_items_agent", "")
    current = (
        "ix_context_items_active" in indexes
        and " where " in indexes.get("ix_context_items_loaded", "")
        and (conn.dialect.name == "postgresql" or "revision, id," in agent_index)
    )
    return 5 if current else 4


def _add_columns(conn: Connection, table: str, added: tuple[tuple[str, str], ...]) -> None:
    present = _columns(conn, table)
    for column, kind in added:
        if column not in present:  # (a database the earlier hand-written upgrade half changed)
            spelled = kind.replace("false", "0") if conn.dialect.name == "sqlite" else kind
            conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN {column} {spelled}")


def _to_2(conn: Connection) -> None:
    _add_columns(conn, "context_agents", (("updated_at", "DOUBLE PRECISION"),))
    meta.create(conn, checkfirst=True)
    _seed_revision(conn)


def _seed_revision(conn: Connection) -> None:
    """The store revision's row, which every write bumps."""
    conflict = "ON CONFLICT DO NOTHING" if conn.dialect.name == "postgresql" else "ON CONFLICT (key) DO NOTHING"
    conn.exec_driver_sql(f"INSERT INTO context_meta (key, value) VALUES ('revision', 0) {conflict}")


def _to_3(conn: Connection) -> None:
    _add_columns(conn, "context_agents", (("steps", "BIGINT NOT NULL DEFAULT 0"),))
    _add_columns(
        conn, items.name, (("last_step", "BIGINT NOT NULL DEFAULT 0"), ("pinned", "BOOLEAN NOT NULL DEFAULT false"))
    )


def _to_4(conn: Connection) -> None:
    deleted.create(conn, checkfirst=True)


# Every index the item table has had: earlier layouts indexed archived items beside
# the others (so archiving rewrote entries), and keyed the agent index differently.
_ITEM_INDEXES = (
    "ix_context_items_tier",
    "ix_context_items_revision",
    "ix_context_items_loaded",
    "ix_context_items_agent",
    "ix_context_items_active",
)


def _to_5(conn: Connection) -> None:
    for name in _ITEM_INDEXES:
        conn.exec_driver_sql(f"DROP INDEX IF EXISTS {name}")
    for index in sorted(items.indexes, key=lambda index: str(index.name)):
        index.create(conn)
    tune_planner(conn, replace=True)


_STEPS: dict[int, tuple[str, Callable[[Connection], None]]] = {
    2: ("store revision and agents' updated_at (change feed)", _to_2),
    3: ("agents' steps, items' last_step and pinned (recency in steps)", _to_3),
    4: ("context_deleted (deletions a diff reports)", _to_4),
    5: ("item indexes: unarchived tier index, agent index by revision", _to_5),
}
assert sorted(_STEPS) == list(range(2, SCHEMA_VERSION + 1)), "a step for every version"
