"""The tables of a memory store and the engine that reaches them (SQLite or PostgreSQL).

The layout follows the seed's ``context_items`` table, with four changes: times are
UNIX seconds (a float sorts and subtracts the same way in every database, and reads
100,000 rows without parsing a string each); ``item_type`` is checked by the store
rather than by a CHECK list, so types can be added; each item also records its
content hash, token estimate, explicit base weight, and whether it is loaded
(in the agent's working set) or archived; and the content itself lives in
``context_contents``, one row per item and content hash, so that rescoring, loading
and archiving rewrite rows of about a hundred bytes instead of copying every item's
text, and a checkpoint can record content hashes instead of the text.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    false,
    text,
)
from sqlalchemy.engine import URL, Connection, Engine

from toolctx._database import in_memory, open_database
from toolctx.memory._items import MAX_ITEM_TYPE_LENGTH

__all__ = [
    "DEFAULT_DB_ENV",
    "MAX_AGENT_ID",
    "MAX_DATABASE_INTEGER",
    "SCHEMA_VERSION",
    "agents",
    "checkpoints",
    "contents",
    "deleted",
    "in_memory",
    "items",
    "meta",
    "metadata",
    "open_engine",
    "schema_versions",
    "tune_planner",
]

DEFAULT_DB_ENV = "TOOLCTX_MEMORY_URL"
_ID = BigInteger().with_variant(Integer, "sqlite")  # SQLite only autoincrements an INTEGER PRIMARY KEY
#: The largest id, limit or revision a memory store takes: a signed 64-bit integer, what both databases hold.
MAX_DATABASE_INTEGER = 2**63 - 1
MAX_AGENT_ID = 200

metadata = MetaData()

agents = Table(
    "context_agents",
    metadata,
    Column("agent_id", String(MAX_AGENT_ID), primary_key=True),
    Column("created_at", Double, nullable=False),
    # Bumped by every write: the row every writer of an agent locks first, so writes
    # of one agent are serialised across processes on PostgreSQL as on SQLite.
    Column("revision", BigInteger, nullable=False, default=0),
    # When a write last changed anything of the agent (UNIX seconds); NULL until then.
    Column("updated_at", Double, nullable=True),
    # The agent's step counter: one per call that saves or uses items; recency counts in steps.
    Column("steps", BigInteger, nullable=False, default=0, server_default="0"),
)

# Store-wide counters. The row ``revision`` is bumped by every write, last thing before
# its commit, so readers in any process can tell that something changed by reading one row.
meta = Table(
    "context_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", BigInteger, nullable=False),
)

#: The layout version this release writes (see ``_migrations``); a database records its own in ``context_schema``.
SCHEMA_VERSION = 5

# One row per layout version the database has been brought to; the highest is its version.
schema_versions = Table(
    "context_schema",
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("applied_at", Double, nullable=False),  # UNIX seconds
    Column("description", String(200), nullable=False),
)

items = Table(
    "context_items",
    metadata,
    Column("id", _ID, primary_key=True, autoincrement=True),
    Column("agent_id", String(MAX_AGENT_ID), ForeignKey("context_agents.agent_id", ondelete="CASCADE"), nullable=False),
    Column("item_type", String(MAX_ITEM_TYPE_LENGTH), nullable=False),
    Column("content_hash", String(32), nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("weight", Double, nullable=True),
    Column("importance_score", Double, nullable=False),
    Column("tier", String(4), nullable=False, default="WARM"),
    Column("access_count", Integer, nullable=False, default=0),
    Column("created_at", Double, nullable=False),
    Column("last_accessed", Double, nullable=False),
    Column("loaded", Boolean, nullable=False, default=False),
    Column("archived", Boolean, nullable=False, default=False),
    # The agent's step when the item was last used (saved, used or loaded).
    Column("last_step", BigInteger, nullable=False, default=0, server_default="0"),
    # A pinned item (one of the current task) does not decay until the task is completed.
    Column("pinned", Boolean, nullable=False, default=False, server_default=false()),
    # The agent revision of the write that last changed what a snapshot sees of this item
    # (its content, tier, or whether it is loaded or archived): a diff reads only newer rows.
    Column("revision", BigInteger, nullable=False, default=0),
    CheckConstraint("importance_score >= 0.0 AND importance_score <= 1.0", name="ck_context_items_score"),
    CheckConstraint("weight IS NULL OR (weight >= 0.0 AND weight <= 1.0)", name="ck_context_items_weight"),
    CheckConstraint("tier IN ('HOT', 'WARM', 'COLD')", name="ck_context_items_tier"),
    CheckConstraint("access_count >= 0 AND tokens >= 0", name="ck_context_items_counts"),
    # Rescoring rewrites every active row; free room in each page lets PostgreSQL
    # update a row in place (a HOT update) instead of adding index entries for it.
    postgresql_with={"fillfactor": 70},
)
# Tier lookups, tier snapshots, rescoring and a flash save's search for COLD items read
# this index of the unarchived items. Within a tier its entries run in id order, the
# table's own order, so a pass over all of an agent's rows (rescoring, archiving) reads
# the table in order: twice as fast on SQLite as visiting the rows in any other order.
# Archived items have no entry: archiving the backlog of COLD items (the first flash save
# of a long-running agent archives nearly all of them) adds none, where an entry for each
# was half the cost of that UPDATE on PostgreSQL.
_UNARCHIVED = items.c.archived.is_(False)  # queries must say it the same way to use the index
Index(
    "ix_context_items_active",
    items.c.agent_id,
    items.c.tier,
    items.c.id,
    items.c.tokens,
    items.c.content_hash,
    items.c.archived,  # always false here, but SQLite reads only indexes that hold every column a query names
    sqlite_where=_UNARCHIVED,
    postgresql_where=_UNARCHIVED,
)
# Every item by agent and the revision that last changed it: a diff reads the rows newer
# than its snapshot, and the other columns ride along for the reads over all of an
# agent's items, archived ones included (stats, agent summaries), which read only this
# index. The entries of the items one write changes (a flash save archives thousands)
# go in one after another: on PostgreSQL the columns are INCLUDE columns, outside the
# key, so the new entries share one key and go in in table order; SQLite has no INCLUDE,
# and its key continues with the id, the order a write visits the items in. Keyed by
# tokens too, they would land all over the index and cost more than the entries saved.
_RIDING = (items.c.archived, items.c.tier, items.c.tokens)
Index("ix_context_items_agent", items.c.agent_id, items.c.revision, items.c.id, *_RIDING).ddl_if(dialect="sqlite")
Index(
    "ix_context_items_agent",
    items.c.agent_id,
    items.c.revision,
    postgresql_include=[column.name for column in _RIDING],
).ddl_if(dialect="postgresql")
# The working set, with what a snapshot and a flash save read of it. Only loaded items
# have entries, so an item leaving the working set (unloaded or archived) adds none.
_LOADED = items.c.loaded.is_(True)  # queries must say it the same way to use the index
Index(
    "ix_context_items_loaded",
    items.c.agent_id,
    items.c.id,
    items.c.content_hash,
    items.c.tokens,
    items.c.tier,
    items.c.archived,
    items.c.loaded,  # always true here, but SQLite reads only indexes that hold every column a query names
    sqlite_where=_LOADED,
    postgresql_where=_LOADED,
)

# Every content an item has had, by hash: the item's row names the current one, and a
# checkpoint records hashes, not text, so it stays small and still restores what it saw.
contents = Table(
    "context_contents",
    metadata,
    Column("item_id", _ID, ForeignKey("context_items.id", ondelete="CASCADE"), nullable=False),
    Column("content_hash", String(32), nullable=False),
    Column("content", Text, nullable=False),
    PrimaryKeyConstraint("item_id", "content_hash", name="pk_context_contents"),
)

# Items deleted, by the agent revision that deleted them, so a diff against an older
# snapshot still reports them removed (their rows are gone).
deleted = Table(
    "context_deleted",
    metadata,
    Column("agent_id", String(MAX_AGENT_ID), ForeignKey("context_agents.agent_id", ondelete="CASCADE"), nullable=False),
    Column("item_id", _ID, nullable=False),
    Column("revision", BigInteger, nullable=False),
)
Index("ix_context_deleted_revision", deleted.c.agent_id, deleted.c.revision)

checkpoints = Table(
    "context_checkpoints",
    metadata,
    Column("id", _ID, primary_key=True, autoincrement=True),
    Column("agent_id", String(MAX_AGENT_ID), ForeignKey("context_agents.agent_id", ondelete="CASCADE"), nullable=False),
    Column("created_at", Double, nullable=False),
    Column("snapshot_hash", String(32), nullable=False),
    Column("item_count", Integer, nullable=False),
    Column("items_archived", Integer, nullable=False),
    Column("hot_items_retained", Integer, nullable=False),
    Column("tokens_before", BigInteger, nullable=False),
    Column("tokens_after", BigInteger, nullable=False),
    Column("revision", BigInteger, nullable=False),  # the agent revision its items are as of
    Column("payload", Text, nullable=False),  # JSON of the checkpointed items' rows, built by the database
)
Index("ix_context_checkpoints_agent", checkpoints.c.agent_id, checkpoints.c.id)


def default_url() -> str:
    """``$TOOLCTX_MEMORY_URL``, or a SQLite file beside the default context directory."""
    configured = os.environ.get(DEFAULT_DB_ENV)
    if configured:
        return configured
    home = Path("~/.agent").expanduser()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    return f"sqlite:///{home / 'memory.db'}"


def open_engine(url: str | os.PathLike[str] | URL | Engine | None) -> Engine:
    """An engine for a memory store at ``url``, by default :func:`default_url` (see ``open_database``)."""
    return open_database(default_url() if url is None else url, "memory stores")


def tune_planner(conn: Connection, *, replace: bool = False) -> None:
    """Give the query planner what it needs for agents with many items (see :func:`_plan_for_large_agents`).

    Run when the tables are created or their indexes rebuilt (``replace``: statistics
    recorded for the earlier indexes are replaced).
    """
    if conn.dialect.name == "sqlite":
        _plan_for_large_agents(conn, replace=replace)
        return
    # Tiers are per agent: one agent's few HOT items among another's many new ones.
    # Without joint statistics the planner multiplies the two selectivities, expects
    # thousands of rows for "this agent's HOT items" and scans the table instead.
    conn.execute(
        text(
            "CREATE STATISTICS IF NOT EXISTS st_context_items_agent_tier (mcv) "
            "ON agent_id, archived, tier FROM context_items"
        )
    )


# What ANALYZE would record for a store with many items per agent (see below):
# rows in the index, then rows per distinct value of each leading column prefix.
_SQLITE_STATS = (
    ("context_agents", "sqlite_autoindex_context_agents_1", "100 1"),
    ("context_items", "ix_context_items_active", "1000000 10000 2000 1 1 1 1"),
    ("context_items", "ix_context_items_loaded", "100000 1000 1 1 1 1 1 1"),
    ("context_items", "ix_context_items_agent", "1000000 10000 10 1 1 1 1"),
    ("context_contents", "sqlite_autoindex_context_contents_1", "1000000 1 1"),
    ("context_checkpoints", "ix_context_checkpoints_agent", "10000 100 1"),
)


def _plan_for_large_agents(conn: Connection, *, replace: bool) -> None:
    """Tell SQLite's query planner that an agent has many items, unless ANALYZE has measured it.

    Without statistics SQLite guesses that ``agent_id = ?`` matches about ten rows, so
    for ``agent_id = ? AND id IN (...)`` it scans the agent's whole index instead of
    looking the ids up: 20 ms instead of under 1 ms for 100 ids among 100,000 items.
    Writing the statistics ANALYZE would produce is SQLite's documented way to steer
    plans; a real ANALYZE later replaces them.
    """
    conn.exec_driver_sql("ANALYZE sqlite_schema")  # creates sqlite_stat1 if it is missing
    measured = conn.exec_driver_sql("SELECT 1 FROM sqlite_stat1 WHERE idx = 'ix_context_items_active'").first()
    if replace or measured is None:
        conn.exec_driver_sql("DELETE FROM sqlite_stat1 WHERE tbl LIKE 'context!_%' ESCAPE '!'")
        for table, index, stat in _SQLITE_STATS:
            conn.exec_driver_sql("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)", (table, index, stat))
        conn.exec_driver_sql("ANALYZE sqlite_schema")  # loads the statistics into this connection's planner
