"""The change feed of a memory store: in-process events, a store-wide revision, and per-agent summaries.

Three ways to follow a store, from nearest to farthest:

- :meth:`MemoryStore.subscribe` calls a function after every committed write made
  through this store object (in this process), with an event dict;
- :meth:`MemoryStore.revision` reads a counter that every write of every process bumps
  in its own transaction, so polling it (and :meth:`MemoryStore.agents`) sees any change;
- on PostgreSQL, every write also sends ``NOTIFY toolctx_memory, '<agent_id>'`` in its
  transaction, so a ``LISTEN toolctx_memory`` connection hears committed writes at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import case, func, select, text, update
from sqlalchemy.engine import Connection

from toolctx._internal import WARNING, log
from toolctx.memory._items import timestamp
from toolctx.memory._results import AgentSummary
from toolctx.memory._schema import agents, items, meta

__all__ = ["CHANNEL", "EVENTS", "ChangeEvent", "Feed", "agent_summaries", "read_revision", "stamp"]

#: The PostgreSQL channel every write notifies, with the agent id as payload.
CHANNEL = "toolctx_memory"
#: The kinds of event :meth:`MemoryStore.subscribe` delivers.
EVENTS = ("registered", "saved", "deleted", "tiers_updated", "flash_saved", "restored", "archived")

ChangeEvent = dict[str, Any]


class Feed:
    """The functions subscribed to one store's events, called after each commit in the writing thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: list[Callable[[ChangeEvent], object]] = []

    def subscribe(self, callback: Callable[[ChangeEvent], object]) -> Callable[[], None]:
        if not callable(callback):
            raise TypeError(f"subscribe takes a function of one event dict, not {callback!r:.80}")
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def publish(self, event: ChangeEvent) -> None:
        """Hand ``event`` to every subscriber; one that raises is logged and the others still run."""
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(dict(event))
            except Exception as exc:  # a dashboard's failure must never fail the agent's write
                log(WARNING, "memory_subscriber_failed", change=event["event"], error=repr(exc))


def stamp(conn: Connection, agent_id: str) -> int:
    """Mark a write of ``agent_id`` in its transaction: bump the store revision and, on PostgreSQL, notify.

    Run it last before the commit: on PostgreSQL the revision row stays locked until
    then, so writers of different agents wait on each other only for their commits.
    """
    revision: int = conn.execute(
        update(meta).where(meta.c.key == "revision").values(value=meta.c.value + 1).returning(meta.c.value)
    ).scalar_one()
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_notify(:channel, :agent_id)"), {"channel": CHANNEL, "agent_id": agent_id})
    return revision


def read_revision(conn: Connection) -> int:
    value: int = conn.execute(select(meta.c.value).where(meta.c.key == "revision")).scalar_one()
    return value


def agent_summaries(conn: Connection) -> list[AgentSummary]:
    """Every agent with its per-tier counts and tokens (unarchived), archived count and last update."""
    unarchived = items.c.archived.is_(False)

    def per_tier(tier: str, value: Any) -> Any:
        return func.coalesce(func.sum(case((unarchived & (items.c.tier == tier), value), else_=0)), 0)

    query = (
        select(
            agents.c.agent_id,
            agents.c.created_at,
            agents.c.updated_at,
            *(per_tier(tier, 1) for tier in ("HOT", "WARM", "COLD")),
            *(per_tier(tier, items.c.tokens) for tier in ("HOT", "WARM", "COLD")),
            func.coalesce(func.sum(case((items.c.archived.is_(True), 1), else_=0)), 0),
            func.coalesce(func.sum(case((items.c.archived.is_(True), items.c.tokens), else_=0)), 0),
        )
        .select_from(agents.outerjoin(items, items.c.agent_id == agents.c.agent_id))
        .group_by(agents.c.agent_id, agents.c.created_at, agents.c.updated_at)
        .order_by(agents.c.agent_id)
    )
    return [
        AgentSummary(
            agent_id=row[0],
            created_at=timestamp(row[1]),
            updated_at=None if row[2] is None else timestamp(row[2]),
            hot_count=int(row[3]),
            warm_count=int(row[4]),
            cold_count=int(row[5]),
            hot_tokens=int(row[6]),
            warm_tokens=int(row[7]),
            cold_tokens=int(row[8]),
            archived_count=int(row[9]),
            archived_tokens=int(row[10]),
        )
        for row in conn.execute(query)
    ]
