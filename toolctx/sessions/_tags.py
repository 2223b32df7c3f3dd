"""The query and task the calls made in a block are tagged with (``session.query()``, ``session.task()``)."""

from __future__ import annotations

from contextvars import ContextVar
from typing import NamedTuple

__all__ = ["Tags", "current_tags"]


class Tags(NamedTuple):
    """The query and task that calls made here are tagged with."""

    query_id: str | None = None
    task_id: int | str | None = None


current_tags: ContextVar[Tags] = ContextVar("toolctx_tags", default=Tags())  # noqa: B039 - a NamedTuple is immutable
