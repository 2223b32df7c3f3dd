"""Flash save, the checkpoints it leaves, and restoring a working set from one.

A checkpoint records the rows of the items it kept, content hashes instead of text,
as JSON the database builds (the rows never travel to Python), together with the
agent revision they are as of, so a diff against it reads only newer rows.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Connection

from toolctx.errors import UnknownCheckpointError
from toolctx.memory._items import ContextItem, timestamp
from toolctx.memory._results import CheckpointInfo, FlashSaveResult, hash_snapshot
from toolctx.memory._rows import RECORDED_HASH, chunks, json_rows, mine, to_items
from toolctx.memory._schema import checkpoints, contents, items

__all__ = ["flash_save", "list_checkpoints", "recorded_rows", "restore"]


def flash_save(conn: Connection, agent_id: str, revision: int, now: float, step: int) -> FlashSaveResult:
    """Checkpoint the working set's HOT and WARM items, archive COLD items, and leave HOT loaded.

    ``revision`` is that of the write this runs in; the checkpoint's items are as of the one before.
    Reloading HOT is a load: its items' recency restarts at ``now`` and at the agent's step ``step``.
    """
    kept_items = (
        mine(agent_id),
        items.c.loaded.is_(True),
        items.c.archived.is_(False),
        items.c.tier.in_(("HOT", "WARM")),
    )
    tokens_before = conn.execute(
        select(func.coalesce(func.sum(items.c.tokens), 0)).where(mine(agent_id), items.c.loaded.is_(True))
    ).scalar_one()
    kept = dict(conn.execute(select(items.c.id, items.c.content_hash).where(*kept_items)).all())
    # The counts are filled in once the items have moved.
    checkpoint_id = conn.execute(
        insert(checkpoints)
        .values(
            agent_id=agent_id,
            created_at=now,
            snapshot_hash="",
            item_count=len(kept),
            items_archived=0,
            hot_items_retained=0,
            tokens_before=int(tokens_before),
            tokens_after=0,
            revision=revision - 1,  # the items as they were before this write
            payload=select(json_rows(conn.dialect.name)).where(*kept_items).scalar_subquery(),
        )
        .returning(checkpoints.c.id)
    ).scalar_one()
    archived = conn.execute(
        update(items)
        .where(mine(agent_id), items.c.tier == "COLD", items.c.archived.is_(False))
        .values(archived=True, loaded=False, revision=revision)
    ).rowcount
    conn.execute(
        update(items)
        .where(mine(agent_id), items.c.loaded.is_(True), items.c.tier != "HOT")
        .values(loaded=False, revision=revision)
    )
    hot = (
        conn.execute(
            update(items)
            .where(mine(agent_id), items.c.tier == "HOT", items.c.archived.is_(False))
            .values(
                access_count=items.c.access_count + 1,
                last_accessed=now,
                last_step=step,
                loaded=True,
                revision=revision,
            )
            .returning(items.c.tokens)
        )
        .scalars()
        .all()
    )
    result = FlashSaveResult(
        checkpoint_id=checkpoint_id,
        items_checkpointed=len(kept),
        items_archived=archived,
        hot_items_retained=len(hot),
        tokens_before=int(tokens_before),
        tokens_after=int(sum(hot)),
    )
    conn.execute(
        update(checkpoints)
        .where(checkpoints.c.id == checkpoint_id)
        .values(
            snapshot_hash=hash_snapshot(kept),
            items_archived=result.items_archived,
            hot_items_retained=result.hot_items_retained,
            tokens_after=result.tokens_after,
        )
    )
    return result


def list_checkpoints(conn: Connection, agent_id: str) -> list[CheckpointInfo]:
    """The agent's checkpoints, newest first."""
    query = (
        select(
            checkpoints.c.id,
            checkpoints.c.created_at,
            checkpoints.c.item_count,
            checkpoints.c.items_archived,
            checkpoints.c.hot_items_retained,
            checkpoints.c.tokens_before,
            checkpoints.c.tokens_after,
            checkpoints.c.snapshot_hash,
        )
        .where(checkpoints.c.agent_id == agent_id)
        .order_by(checkpoints.c.id.desc())
    )
    return [
        CheckpointInfo(
            id=row[0],
            agent_id=agent_id,
            created_at=timestamp(row[1]),
            item_count=row[2],
            items_archived=row[3],
            hot_items_retained=row[4],
            tokens_before=row[5],
            tokens_after=row[6],
            snapshot_hash=row[7],
        )
        for row in conn.execute(query)
    ]


def recorded_rows(conn: Connection, agent_id: str, checkpoint_id: int) -> tuple[list[list[Any]], int]:
    """A checkpoint's rows of item columns (content hashes, no content), and the agent revision they are as of."""
    found = conn.execute(
        select(checkpoints.c.payload, checkpoints.c.revision).where(
            checkpoints.c.agent_id == agent_id, checkpoints.c.id == checkpoint_id
        )
    ).first()
    if found is None:
        raise UnknownCheckpointError(f"agent {agent_id!r} has no checkpoint {checkpoint_id!r}")
    return orjson.loads(found[0]), found[1]


def _recorded_items(conn: Connection, agent_id: str, checkpoint_id: int) -> list[ContextItem]:
    """A checkpoint's items as it recorded them, content included, best first."""
    rows, _revision = recorded_rows(conn, agent_id, checkpoint_id)
    texts: dict[tuple[int, str], str] = {}
    for chunk in chunks([row[0] for row in rows]):
        found = conn.execute(
            select(contents.c.item_id, contents.c.content_hash, contents.c.content).where(contents.c.item_id.in_(chunk))
        ).all()
        texts.update(((item_id, digest), text) for item_id, digest, text in found)
    # Items deleted since the checkpoint have no content left: they are not restored.
    with_content = [
        (*row[:3], texts[row[0], row[RECORDED_HASH]], *row[3:]) for row in rows if (row[0], row[RECORDED_HASH]) in texts
    ]
    return sorted(to_items(with_content), key=lambda item: (-item.importance_score, -item.id))


def restore(conn: Connection, agent_id: str, revision: int, checkpoint_id: int) -> list[ContextItem]:
    """Make the working set the items a checkpoint recorded, unarchiving them; those items as it recorded them."""
    recorded = _recorded_items(conn, agent_id, checkpoint_id)
    conn.execute(update(items).where(mine(agent_id), items.c.loaded.is_(True)).values(loaded=False, revision=revision))
    for chunk in chunks([item.id for item in recorded]):
        conn.execute(
            update(items)
            .where(mine(agent_id), items.c.id.in_(chunk))
            .values(loaded=True, archived=False, revision=revision)
        )
    return recorded
