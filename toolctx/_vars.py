"""The context variables that say which session and which query/task a call belongs to."""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from toolctx.sessions import ContextSession

__all__ = ["Tags", "active_session", "active_tags"]


class Tags(NamedTuple):
    """The query and task that calls made here are tagged with."""

    query_id: str | None = None
    task_id: int | str | None = None


active_session: ContextVar[ContextSession | None] = ContextVar("toolctx_session", default=None)
active_tags: ContextVar[Tags] = ContextVar("toolctx_tags", default=Tags())  # noqa: B039 - a NamedTuple is immutable
