"""Snapshots of a context, and what changed in it since a snapshot or a checkpoint.

A context is a tier (its unarchived items) or, with ``tier=None``, the working set.
Every write records its agent revision on the item rows whose place in a context it
changes, so a diff against a snapshot or checkpoint of revision ``r`` reads only the
rows written after ``r``, and only the added and modified items in full.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.engine import Connection

from toolctx.errors import ConfigError
from toolctx.memory._checkpoints import recorded_rows
from toolctx.memory._items import ContextItem, Tier, timestamp
from toolctx.memory._results import ContextDiff, ContextSnapshot, hash_snapshot
from toolctx.memory._rows import RECORDED_HASH, chunks, mine, revision_of, select_items, to_items
from toolctx.memory._schema import deleted, items

__all__ = ["diff", "snapshot"]


def snapshot(conn: Connection, agent_id: str, tier: Tier | None, now: float) -> ContextSnapshot:
    """The ids and content hashes of a tier or, with ``tier=None``, of the working set."""
    revision = revision_of(conn, agent_id)
    return _snapshot(agent_id, tier, _entries(conn, agent_id, tier), revision, now)


def diff(conn: Connection, agent_id: str, previous: ContextSnapshot | int, now: float) -> ContextDiff:
    """What changed in a context since ``previous``: a snapshot of it, or a checkpoint id (the working set).

    A snapshot without a revision (built by hand), or of a later revision than the
    agent's (from another database), is compared with the whole context instead.
    """
    if isinstance(previous, ContextSnapshot):
        if previous.agent_id != agent_id:
            raise ConfigError(
                f"that snapshot is of agent {previous.agent_id!r}, not {agent_id!r}; "
                "diff against a snapshot of the same agent"
            )
        tier, before, since = previous.tier, previous.items, previous.revision
    else:
        recorded, since = recorded_rows(conn, agent_id, previous)
        tier, before = None, {row[0]: row[RECORDED_HASH] for row in recorded}
    revision = revision_of(conn, agent_id)
    if since is None or since > revision:
        current = _entries(conn, agent_id, tier)
        changed = [item_id for item_id, _hash in current.items() - before.items()]
        removed = sorted(before.keys() - current.keys())
    else:
        current, changed, removed = _changes_since(conn, agent_id, since, tier, before)
    added_ids = sorted(i for i in changed if i not in before)
    modified_ids = sorted(i for i in changed if i in before)
    fetched: dict[int, ContextItem] = {}
    for chunk in chunks(changed):
        found = conn.execute(select_items(mine(agent_id), items.c.id.in_(chunk))).all()
        fetched.update((item.id, item) for item in to_items(found))
    return ContextDiff(
        added=[fetched[i] for i in added_ids],
        modified=[fetched[i] for i in modified_ids],
        removed=removed,
        unchanged=len(current) - len(added_ids) - len(modified_ids),
        current=_snapshot(agent_id, tier, current, revision, now),
    )


def _entries(conn: Connection, agent_id: str, tier: Tier | None) -> dict[int, str]:
    """``{item id: content hash}`` of the context now."""
    query = select(items.c.id, items.c.content_hash).where(mine(agent_id))
    if tier is None:
        query = query.where(items.c.loaded.is_(True))
    else:
        query = query.where(items.c.archived.is_(False), items.c.tier == tier.value)
    return dict(conn.execute(query).all())


def _snapshot(agent_id: str, tier: Tier | None, entries: dict[int, str], revision: int, now: float) -> ContextSnapshot:
    return ContextSnapshot.model_construct(
        agent_id=agent_id,
        tier=tier,
        items=entries,
        snapshot_hash=hash_snapshot(entries),
        taken_at=timestamp(now),
        revision=revision,
    )


def _changes_since(
    conn: Connection, agent_id: str, since: int, tier: Tier | None, before: dict[int, str]
) -> tuple[dict[int, str], list[int], list[int]]:
    """The context now, and the ids added or modified and removed, from the rows written after ``since``."""
    current = dict(before)
    changed: list[int] = []
    removed: list[int] = []
    written = conn.execute(
        select(items.c.id, items.c.content_hash, items.c.loaded, items.c.archived, items.c.tier).where(
            mine(agent_id), items.c.revision > since
        )
    ).all()
    gone = conn.execute(
        select(deleted.c.item_id).where(deleted.c.agent_id == agent_id, deleted.c.revision > since)
    ).scalars()
    for item_id in gone:
        if current.pop(item_id, None) is not None:
            removed.append(item_id)
    for item_id, hash_now, loaded, archived, item_tier in written:
        inside = loaded if tier is None else (not archived and item_tier == tier.value)
        hash_before = before.get(item_id)
        if inside:
            current[item_id] = hash_now
            if hash_before != hash_now:
                changed.append(item_id)
        elif hash_before is not None:
            del current[item_id]
            removed.append(item_id)
    return current, changed, sorted(removed)
