"""Recency, and scoping to a query or a task, as strategies to combine with others."""

from __future__ import annotations

from datetime import timedelta

from toolctx._hashing import hash_query
from toolctx.errors import ConfigError
from toolctx.selection._base import Scored, SelectionState, Strategy, best_first, register

__all__ = ["InQuery", "InTask", "Recency", "in_query", "in_task", "recency"]


class Recency(Strategy):
    """Newer is better: a score that halves every ``half_life`` of age."""

    name = "recency"

    def __init__(self, half_life: timedelta = timedelta(hours=1)) -> None:
        if not isinstance(half_life, timedelta) or half_life <= timedelta(0):
            raise ConfigError(f"half_life must be a positive timedelta, got {half_life!r}")
        self.half_life = half_life.total_seconds()

    def rank(self, state: SelectionState) -> list[Scored]:
        now = state.clock()
        scored = [
            Scored(p, 0.5 ** (max(0.0, (now - p.timestamp).total_seconds()) / self.half_life)) for p in state.candidates
        ]
        return best_first(scored, state)


class InQuery(Strategy):
    """Only calls made inside ``with session.query(text)`` for this query (score 1)."""

    name = "in_query"

    def __init__(self, query_id: str) -> None:
        self.query_id = query_id

    def rank(self, state: SelectionState) -> list[Scored]:
        return [Scored(p, 1.0) for p in state.candidates if p.query_id == self.query_id]


class InTask(Strategy):
    """Only calls made inside ``with session.task(task_id)`` (score 1)."""

    name = "in_task"

    def __init__(self, task_id: int | str) -> None:
        self.task_id = task_id

    def rank(self, state: SelectionState) -> list[Scored]:
        return [Scored(p, 1.0) for p in state.candidates if p.task_id == self.task_id]


def recency(half_life: timedelta = timedelta(hours=1)) -> Recency:
    return Recency(half_life)


def in_query(query: str | None = None, *, query_id: str | None = None) -> InQuery:
    """Scope to one query, given its text or its id (``hash_query(text)``)."""
    if (query is None) == (query_id is None):
        raise ConfigError("in_query() takes the query text or query_id=..., exactly one of them")
    return InQuery(query_id if query_id is not None else hash_query(query or ""))


def in_task(task_id: int | str) -> InTask:
    """Scope to one task id."""
    return InTask(task_id)


register("recency", recency)
