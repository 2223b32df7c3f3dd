"""Every earlier layout of a memory store, as raw SQL, with the rows a store of that time held.

Read from the history of ``toolctx/memory/_schema.py`` (each layout names the commit
that introduced it) and from the hand-written upgrade the version table replaced.
``{double}``, ``{serial}`` and the like stand for what differs between SQLite and
PostgreSQL, as SQLAlchemy wrote it for each.
"""

from __future__ import annotations

import orjson

__all__ = ["FOUND_ON_POSTGRESQL", "LAYOUTS", "SAMPLE", "layout_sql", "refused_sql"]

_WORDS = {
    "sqlite": {"double": "DOUBLE", "serial": "INTEGER", "bigid": "INTEGER", "true": "1", "false": "0", "fill": ""},
    "postgresql": {
        "double": "DOUBLE PRECISION",
        "serial": "BIGSERIAL",
        "bigid": "BIGINT",
        "true": "true",
        "false": "false",
        "fill": " WITH (fillfactor = 70)",
    },
}

_CHECKS = """
    CONSTRAINT ck_context_items_score CHECK (importance_score >= 0.0 AND importance_score <= 1.0),
    CONSTRAINT ck_context_items_weight CHECK (weight IS NULL OR (weight >= 0.0 AND weight <= 1.0)),
    CONSTRAINT ck_context_items_tier CHECK (tier IN ('HOT', 'WARM', 'COLD')),
    CONSTRAINT ck_context_items_counts CHECK (access_count >= 0 AND tokens >= 0),
    FOREIGN KEY(agent_id) REFERENCES context_agents (agent_id) ON DELETE CASCADE"""

# 2e7e9dd (22 Nov): content in its own table, checkpoints of content hashes.
_V1_TABLES = [
    """CREATE TABLE context_agents (
        agent_id VARCHAR(200) NOT NULL, created_at {double} NOT NULL, revision BIGINT NOT NULL,
        PRIMARY KEY (agent_id))""",
    """CREATE TABLE context_checkpoints (
        id {serial} NOT NULL, agent_id VARCHAR(200) NOT NULL, created_at {double} NOT NULL,
        snapshot_hash VARCHAR(32) NOT NULL, item_count INTEGER NOT NULL, items_archived INTEGER NOT NULL,
        hot_items_retained INTEGER NOT NULL, tokens_before BIGINT NOT NULL, tokens_after BIGINT NOT NULL,
        revision BIGINT NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (id),
        FOREIGN KEY(agent_id) REFERENCES context_agents (agent_id) ON DELETE CASCADE)""",
    "CREATE INDEX ix_context_checkpoints_agent ON context_checkpoints (agent_id, id)",
    """CREATE TABLE context_items (
        id {serial} NOT NULL, agent_id VARCHAR(200) NOT NULL, item_type VARCHAR(64) NOT NULL,
        content_hash VARCHAR(32) NOT NULL, tokens INTEGER NOT NULL, weight {double},
        importance_score {double} NOT NULL, tier VARCHAR(4) NOT NULL, access_count INTEGER NOT NULL,
        created_at {double} NOT NULL, last_accessed {double} NOT NULL, loaded BOOLEAN NOT NULL,
        archived BOOLEAN NOT NULL, revision BIGINT NOT NULL, PRIMARY KEY (id),"""
    + _CHECKS
    + "){fill}",
    "CREATE INDEX ix_context_items_revision ON context_items (agent_id, revision)",
    """CREATE TABLE context_contents (
        item_id {bigid} NOT NULL, content_hash VARCHAR(32) NOT NULL, content TEXT NOT NULL,
        CONSTRAINT pk_context_contents PRIMARY KEY (item_id, content_hash),
        FOREIGN KEY(item_id) REFERENCES context_items (id) ON DELETE CASCADE)""",
]
_V1_FIRST_INDEXES = [
    "CREATE INDEX ix_context_items_tier ON context_items (agent_id, archived, tier, loaded, tokens, id, content_hash)",
    "CREATE INDEX ix_context_items_loaded ON context_items "
    "(agent_id, loaded, id, content_hash, tokens, tier, archived)",
]
# 3772a75, 34d7ec4: the tier index without loaded; the working-set index only of loaded items.
_V1_INDEXES = [
    "CREATE INDEX ix_context_items_tier ON context_items (agent_id, archived, tier, id, tokens, content_hash)",
    "CREATE INDEX ix_context_items_loaded ON context_items "
    "(agent_id, id, content_hash, tokens, tier, archived, loaded) WHERE loaded IS {true}",
]
# e73557d: the change feed.
_V2 = [
    "ALTER TABLE context_agents ADD COLUMN updated_at {double}",
    'CREATE TABLE context_meta ("key" VARCHAR(64) NOT NULL, value BIGINT NOT NULL, PRIMARY KEY ("key"))',
    "INSERT INTO context_meta (\"key\", value) VALUES ('revision', 7)",
]
# ae1b6f7: recency in steps, pinned task items.
_V3 = [
    "ALTER TABLE context_agents ADD COLUMN steps BIGINT DEFAULT '0' NOT NULL",
    "ALTER TABLE context_items ADD COLUMN last_step BIGINT DEFAULT '0' NOT NULL",
    "ALTER TABLE context_items ADD COLUMN pinned BOOLEAN DEFAULT {false} NOT NULL",
]
# fdcf2f5: deletions a diff reports.
_V4 = [
    """CREATE TABLE context_deleted (
        agent_id VARCHAR(200) NOT NULL, item_id {bigid} NOT NULL, revision BIGINT NOT NULL,
        FOREIGN KEY(agent_id) REFERENCES context_agents (agent_id) ON DELETE CASCADE)""",
    "CREATE INDEX ix_context_deleted_revision ON context_deleted (agent_id, revision)",
]
# 86f007b: archived items leave the tier index (the hand-written upgrade's index swap).
_V5_FIRST = [
    "DROP INDEX ix_context_items_tier",
    "DROP INDEX ix_context_items_revision",
    "CREATE INDEX ix_context_items_active ON context_items (agent_id, tier, id, tokens, content_hash, archived) "
    "WHERE archived IS {false}",
]
_V5_FIRST_AGENT = {
    "sqlite": "CREATE INDEX ix_context_items_agent ON context_items (agent_id, revision, archived, tier, tokens)",
    "postgresql": "CREATE INDEX ix_context_items_agent ON context_items (agent_id, revision) "
    "INCLUDE (archived, tier, tokens)",
}
# 69d84ec: on SQLite the agent index's key continues with the id.
_V5_AGENT = {
    "sqlite": "CREATE INDEX ix_context_items_agent ON context_items (agent_id, revision, id, archived, tier, tokens)",
    "postgresql": _V5_FIRST_AGENT["postgresql"],
}

#: name -> (the version the store should find, the statements, in order, up to the rows).
LAYOUTS: dict[str, tuple[int, list[str]]] = {
    "1-2e7e9dd": (1, [*_V1_TABLES, *_V1_FIRST_INDEXES]),
    "1-34d7ec4": (1, [*_V1_TABLES, *_V1_INDEXES]),
    "2-e73557d": (2, [*_V1_TABLES, *_V1_INDEXES, *_V2]),
    "3-ae1b6f7": (3, [*_V1_TABLES, *_V1_INDEXES, *_V2, *_V3]),
    "4-fdcf2f5": (4, [*_V1_TABLES, *_V1_INDEXES, *_V2, *_V3, *_V4]),
    "4-86f007b": (4, [*_V1_TABLES, *_V1_INDEXES, *_V2, *_V3, *_V4, *_V5_FIRST, "{agent_first}"]),
    "5-69d84ec": (5, [*_V1_TABLES, *_V1_INDEXES, *_V2, *_V3, *_V4, *_V5_FIRST, "{agent}"]),
}

#: Layouts PostgreSQL held in a later version's form: 69d84ec changed the agent index on SQLite only.
FOUND_ON_POSTGRESQL = {"4-86f007b": 5}

#: 9b1f23f (the first memory store): item text inside context_items; no upgrade reads it.
REFUSED = [
    """CREATE TABLE context_agents (
        agent_id VARCHAR(200) NOT NULL, created_at {double} NOT NULL, revision BIGINT NOT NULL,
        PRIMARY KEY (agent_id))""",
    """CREATE TABLE context_items (
        id {serial} NOT NULL, agent_id VARCHAR(200) NOT NULL, item_type VARCHAR(64) NOT NULL,
        content TEXT NOT NULL, content_hash VARCHAR(32) NOT NULL, tokens INTEGER NOT NULL, weight {double},
        importance_score {double} NOT NULL, tier VARCHAR(4) NOT NULL, access_count INTEGER NOT NULL,
        created_at {double} NOT NULL, last_accessed {double} NOT NULL, loaded BOOLEAN NOT NULL,
        archived BOOLEAN NOT NULL, PRIMARY KEY (id),"""
    + _CHECKS
    + ")",
    "INSERT INTO context_agents VALUES ('old', 1700000000.0, 1)",
]

T0 = 1_700_000_000.0
#: What the rows below hold: item id -> (type, content, tier, loaded, archived).
SAMPLE = {
    1: ("TASK", "Add retries to the uploader", "HOT", True, False),
    2: ("CODE", "def upload(): ...", "WARM", True, False),
    3: ("ERROR", "TimeoutError after 30 s", "COLD", False, True),
}
_HASHES = {1: "0" * 31 + "1", 2: "0" * 31 + "2", 3: "0" * 31 + "3"}


def _rows(version: int, words: dict[str, str]) -> list[str]:
    agent_extra = {1: "", 2: ", NULL", 3: ", NULL, 4", 4: ", NULL, 4", 5: ", NULL, 4"}[version]
    statements = [f"INSERT INTO context_agents VALUES ('worker', {T0}, 3{agent_extra})"]
    for item_id, (item_type, content, tier, loaded, archived) in SAMPLE.items():
        flags = f"{words['true'] if loaded else words['false']}, {words['true'] if archived else words['false']}"
        score = {"HOT": 0.9, "WARM": 0.6, "COLD": 0.1}[tier]
        extra = "" if version < 3 else f", 2, {words['false']}"
        statements.append(
            f"INSERT INTO context_items (id, agent_id, item_type, content_hash, tokens, weight, importance_score, "
            f"tier, access_count, created_at, last_accessed, loaded, archived, revision"
            f"{'' if version < 3 else ', last_step, pinned'}) VALUES ({item_id}, 'worker', '{item_type}', "
            f"'{_HASHES[item_id]}', 5, NULL, {score}, '{tier}', 1, {T0 + item_id}, {T0 + item_id}, {flags}, 2{extra})"
        )
        statements.append(f"INSERT INTO context_contents VALUES ({item_id}, '{_HASHES[item_id]}', '{content}')")
    recorded = [
        [1, "worker", "TASK", 0.9, "HOT", 1, T0 + 1, T0 + 1, _HASHES[1], 5, True, False],
        [2, "worker", "CODE", 0.6, "WARM", 1, T0 + 2, T0 + 2, _HASHES[2], 5, True, False],
    ]
    payload = orjson.dumps(recorded).decode()
    statements.append(
        "INSERT INTO context_checkpoints (id, agent_id, created_at, snapshot_hash, item_count, items_archived, "
        f"hot_items_retained, tokens_before, tokens_after, revision, payload) VALUES (1, 'worker', {T0 + 10}, "
        f"'{'a' * 32}', 2, 1, 1, 15, 10, 2, '{payload}')"
    )
    if words["serial"] == "BIGSERIAL":  # rows inserted with explicit ids leave the sequences behind
        statements += [
            "SELECT setval('context_items_id_seq', 3)",
            "SELECT setval('context_checkpoints_id_seq', 1)",
        ]
    return statements


def layout_sql(name: str, dialect: str) -> list[str]:
    """The statements that make a database in layout ``name`` on ``dialect``, rows included."""
    words = _WORDS[dialect]
    version, statements = LAYOUTS[name]
    fill = {**words, "agent_first": _V5_FIRST_AGENT[dialect], "agent": _V5_AGENT[dialect]}
    made = [statement.format(**fill) for statement in statements]
    return made + _rows(version, words)


def refused_sql(dialect: str) -> list[str]:
    """The statements that make a database in the first layout, which no upgrade reads."""
    return [statement.format(**_WORDS[dialect]) for statement in REFUSED]
