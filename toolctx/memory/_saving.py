"""Saving items and replacing their content.

An item's row is built and checked in Python before any transaction starts, so one
bad entry of a batch stores none; its content goes to ``context_contents``, keyed by
item and content hash, where every content an item has had stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection

from toolctx._checks import fraction
from toolctx.errors import ConfigError, UnknownItemError
from toolctx.memory._config import MemoryConfig
from toolctx.memory._items import ContextItem, content_hash
from toolctx.memory._rows import ITEM_COLUMNS, mine, to_item
from toolctx.memory._schema import contents, deleted, items

__all__ = [
    "archive_items",
    "check_content",
    "delete_items",
    "insert_items",
    "item_row",
    "replace_content",
    "saved_item",
]


def check_content(content: object, max_bytes: int) -> str:
    """``content`` if the store can keep it: non-empty Unicode text without NUL, of at most ``max_bytes``."""
    if not isinstance(content, str):
        raise ConfigError(f"content must be a string, not {type(content).__name__}; serialise it first")
    if not content.strip():
        raise ConfigError("content is empty; there is nothing to remember")
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ConfigError(f"content is not valid Unicode text ({exc.reason} at position {exc.start})") from None
    if "\x00" in content:
        raise ConfigError("content contains a NUL character, which PostgreSQL text cannot hold; strip it first")
    if size > max_bytes:
        raise ConfigError(
            f"content is {size:,} bytes, over the limit of {max_bytes:,}; "
            "store large outputs in a toolctx session and remember a summary, "
            "or raise MemoryConfig(max_content_bytes=...)"
        )
    return content


def item_row(
    config: MemoryConfig,
    agent_id: str,
    item_type: str,
    content: str,
    importance_score: float | None,
    now: float,
    loaded: bool,
    pinned: bool | None = None,
) -> dict[str, Any]:
    """A new item's row, checked; its content is under ``"content"`` and goes to its own table.

    ``pinned=None`` pins the item if its type is one of ``config.pinned_types``.
    """
    type_weight = config.weight_of(item_type)
    content = config.redacted(check_content(content, config.max_content_bytes))
    weight = None if importance_score is None else fraction("importance_score", importance_score)
    score = type_weight if weight is None else weight
    return {
        "agent_id": agent_id,
        "item_type": item_type,
        "content": content,
        "content_hash": content_hash(content),
        "tokens": config.count_tokens(content),
        "weight": weight,
        "importance_score": score,
        "tier": config.thresholds.tier_of(score).value,
        "access_count": 0,
        "created_at": now,
        "last_accessed": now,
        "loaded": loaded,
        "archived": False,
        "pinned": item_type in config.pinned_types if pinned is None else bool(pinned),
    }


def insert_items(conn: Connection, revision: int, rows: Sequence[dict[str, Any]], step: int = 0) -> list[int]:
    """Insert rows built by :func:`item_row`, written at ``revision`` and agent step ``step``; their ids in order."""
    item_rows = [
        {**{k: v for k, v in row.items() if k != "content"}, "revision": revision, "last_step": step} for row in rows
    ]
    ids = list(conn.execute(insert(items).returning(items.c.id, sort_by_parameter_order=True), item_rows).scalars())
    conn.execute(
        insert(contents),
        [
            {"item_id": item_id, "content_hash": row["content_hash"], "content": row["content"]}
            for item_id, row in zip(ids, rows, strict=True)
        ],
    )
    return ids


def saved_item(item_id: int, row: dict[str, Any]) -> ContextItem:
    """The item a row built by :func:`item_row` became once stored as ``item_id``."""
    return to_item((item_id, *(row[column.name] for column in ITEM_COLUMNS[1:])))


def replace_content(
    conn: Connection, agent_id: str, revision: int, item_id: int, content: str, *, tokens: int, now: float, step: int
) -> None:
    """Point the item at ``content`` (a checked string), keeping its earlier contents; rewriting it is a use."""
    digest = content_hash(content)
    changed = conn.execute(
        update(items)
        .where(mine(agent_id), items.c.id == item_id)
        .values(
            content_hash=digest,
            tokens=tokens,
            revision=revision,
            last_accessed=now,
            last_step=step,
            loaded=True,
            archived=False,
        )
    ).rowcount
    if changed == 0:
        raise UnknownItemError(f"agent {agent_id!r} has no item {item_id!r}")
    # Earlier contents stay: checkpoints that recorded them can still restore them.
    known = select(contents.c.item_id).where(contents.c.item_id == item_id, contents.c.content_hash == digest)
    if conn.execute(known).first() is None:
        conn.execute(insert(contents).values(item_id=item_id, content_hash=digest, content=content))


def archive_items(conn: Connection, agent_id: str, revision: int, item_ids: Sequence[int]) -> list[int]:
    """Archive the agent's items ``item_ids`` (all must be its own); the ids that were not archived before."""
    found = dict(
        conn.execute(select(items.c.id, items.c.archived).where(mine(agent_id), items.c.id.in_(item_ids))).all()
    )
    missing = [item_id for item_id in item_ids if item_id not in found]
    if missing:
        raise UnknownItemError(f"agent {agent_id!r} has no item {missing[0]!r}; nothing was archived")
    fresh = [item_id for item_id in item_ids if not found[item_id]]
    if fresh:
        conn.execute(
            update(items)
            .where(mine(agent_id), items.c.id.in_(fresh))
            .values(archived=True, loaded=False, revision=revision)
        )
    return fresh


def delete_items(conn: Connection, agent_id: str, revision: int, item_ids: Sequence[int]) -> None:
    """Delete the agent's items ``item_ids`` (all must be its own) and every content they had."""
    found = set(conn.execute(select(items.c.id).where(mine(agent_id), items.c.id.in_(item_ids))).scalars())
    missing = [item_id for item_id in item_ids if item_id not in found]
    if missing:
        raise UnknownItemError(f"agent {agent_id!r} has no item {missing[0]!r}; nothing was deleted")
    conn.execute(delete(contents).where(contents.c.item_id.in_(item_ids)))
    conn.execute(delete(items).where(mine(agent_id), items.c.id.in_(item_ids)))
    conn.execute(insert(deleted), [{"agent_id": agent_id, "item_id": i, "revision": revision} for i in item_ids])
