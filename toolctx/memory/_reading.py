"""Looking at items, loading a tier into the working set, and counting what an agent holds.

Looking (:func:`list_items`, :func:`working_set`, :func:`stats`) changes nothing;
loading (:func:`load_tier`) counts an access per item and puts it in the working set.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import and_, func, select, update
from sqlalchemy.engine import Connection

from toolctx.errors import UnknownItemError
from toolctx.memory._items import ContextItem, Tier
from toolctx.memory._results import MemoryStats
from toolctx.memory._rows import BEST_FIRST, chunks, mine, select_items, to_items
from toolctx.memory._schema import checkpoints, items

__all__ = ["list_items", "load_tier", "some_items", "stats", "unpin", "use_items", "working_set"]


def list_items(
    conn: Connection, agent_id: str, tier: Tier | None, *, archived: bool, limit: int | None
) -> list[ContextItem]:
    """Items of a tier (or all), best first, archived ones too if asked."""
    query = select_items(mine(agent_id))
    if tier is not None:
        query = query.where(items.c.tier == tier.value)
    if not archived:
        query = query.where(items.c.archived.is_(False))
    query = query.order_by(*BEST_FIRST)
    if limit is not None:
        query = query.limit(limit)
    return to_items(conn.execute(query).all())


def load_tier(
    conn: Connection, agent_id: str, revision: int, tier: Tier, *, limit: int | None, now: float, step: int
) -> list[ContextItem]:
    """Load the tier's unarchived items (its best ``limit``) into the working set, counting an access each.

    A load is a use: both recency clocks restart, the day clock at ``now`` and the
    step clock at the agent's step ``step``.
    """
    selected = and_(mine(agent_id), items.c.tier == tier.value, items.c.archived.is_(False))
    if limit is not None:
        top = select(items.c.id).where(selected).order_by(*BEST_FIRST).limit(limit)
        selected = and_(mine(agent_id), items.c.id.in_(top.scalar_subquery()))
    conn.execute(
        update(items)
        .where(selected)
        .values(
            access_count=items.c.access_count + 1, last_accessed=now, last_step=step, loaded=True, revision=revision
        )
    )
    # The update changes neither tiers nor scores, so ``selected`` picks the same items again.
    return to_items(conn.execute(select_items(selected).order_by(*BEST_FIRST)).all())


def use_items(
    conn: Connection, agent_id: str, revision: int, item_ids: Sequence[int], *, now: float, step: int
) -> None:
    """Record a use of each of the agent's items ``item_ids``: an access, recency reset, back in the working set.

    An archived item that is used comes back (it is unarchived). Unknown ids raise
    :class:`~toolctx.errors.UnknownItemError` and change nothing.
    """
    found: set[int] = set()
    for chunk in chunks(item_ids):
        found.update(conn.execute(select(items.c.id).where(mine(agent_id), items.c.id.in_(chunk))).scalars())
    missing = [item_id for item_id in item_ids if item_id not in found]
    if missing:
        raise UnknownItemError(f"agent {agent_id!r} has no item {missing[0]!r}; nothing was used")
    for chunk in chunks(item_ids):
        conn.execute(
            update(items)
            .where(mine(agent_id), items.c.id.in_(chunk))
            .values(
                access_count=items.c.access_count + 1,
                last_accessed=now,
                last_step=step,
                loaded=True,
                archived=False,
                revision=revision,
            )
        )


def some_items(conn: Connection, agent_id: str, item_ids: Sequence[int]) -> list[ContextItem]:
    """The agent's items ``item_ids``, best first."""
    found: list[ContextItem] = []
    for chunk in chunks(item_ids):
        found.extend(to_items(conn.execute(select_items(mine(agent_id), items.c.id.in_(chunk))).all()))
    return sorted(found, key=lambda item: (-item.importance_score, -item.id))


def unpin(conn: Connection, agent_id: str, *, now: float, step: int) -> list[int]:
    """Unpin the agent's pinned items, which then decay from now; their ids."""
    return sorted(
        conn.execute(
            update(items)
            .where(mine(agent_id), items.c.pinned.is_(True))
            .values(pinned=False, last_accessed=now, last_step=step)
            .returning(items.c.id)
        ).scalars()
    )


def working_set(conn: Connection, agent_id: str) -> list[ContextItem]:
    """The items the agent holds in context, best first."""
    return to_items(conn.execute(select_items(mine(agent_id), items.c.loaded.is_(True)).order_by(*BEST_FIRST)).all())


def stats(conn: Connection, agent_id: str) -> MemoryStats:
    """Totals, per-tier counts and tokens, the working set and the number of checkpoints."""
    # Two index-only reads: tiers from the index of all the agent's items, the working set from its own.
    rows = conn.execute(
        select(items.c.tier, items.c.archived, func.count(), func.coalesce(func.sum(items.c.tokens), 0))
        .where(mine(agent_id))
        .group_by(items.c.tier, items.c.archived)
    ).all()
    working_items, working_tokens = conn.execute(
        select(func.count(), func.coalesce(func.sum(items.c.tokens), 0)).where(mine(agent_id), items.c.loaded.is_(True))
    ).one()
    checkpoint_count = conn.execute(
        select(func.count()).select_from(checkpoints).where(checkpoints.c.agent_id == agent_id)
    ).scalar_one()
    counts = dict.fromkeys(("HOT", "WARM", "COLD"), 0)
    tokens = dict.fromkeys(("HOT", "WARM", "COLD"), 0)
    archived = 0
    for tier, is_archived, count, token_sum in rows:
        counts[tier] += count
        tokens[tier] += int(token_sum)
        archived += count if is_archived else 0
    return MemoryStats(
        agent_id=agent_id,
        total_items=sum(counts.values()),
        hot_count=counts["HOT"],
        warm_count=counts["WARM"],
        cold_count=counts["COLD"],
        archived_count=archived,
        hot_tokens=tokens["HOT"],
        warm_tokens=tokens["WARM"],
        cold_tokens=tokens["COLD"],
        total_tokens=sum(tokens.values()),
        working_items=working_items,
        working_tokens=int(working_tokens),
        checkpoints=checkpoint_count,
    )
