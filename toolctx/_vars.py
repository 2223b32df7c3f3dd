"""The context variables that say which session and which query/task a call belongs to.

Context variables follow asyncio tasks and context-copying thread pools, but a
plain ``threading.Thread`` starts with none of them. For such threads toolctx also
keeps the process-wide list of ``with session()`` blocks currently entered: when
they were all entered by one thread, its innermost session is unambiguous and a
worker thread without context uses it.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from toolctx.sessions import ContextSession

__all__ = ["Tags", "active_session", "active_tags", "entered", "left", "sole_entered_session"]


class Tags(NamedTuple):
    """The query and task that calls made here are tagged with."""

    query_id: str | None = None
    task_id: int | str | None = None


active_session: ContextVar[ContextSession | None] = ContextVar("toolctx_session", default=None)
active_tags: ContextVar[Tags] = ContextVar("toolctx_tags", default=Tags())  # noqa: B039 - a NamedTuple is immutable

_entered: list[tuple[ContextSession, int]] = []
_entered_lock = threading.Lock()


def entered(session: ContextSession) -> None:
    with _entered_lock:
        _entered.append((session, threading.get_ident()))


def left(session: ContextSession) -> None:
    with _entered_lock:
        for index in range(len(_entered) - 1, -1, -1):
            if _entered[index][0] is session:
                del _entered[index]
                return


def sole_entered_session() -> ContextSession | None:
    """The innermost entered session if every entered session belongs to one thread, else None."""
    with _entered_lock:
        if not _entered or any(thread != _entered[0][1] for _, thread in _entered):
            return None
        return _entered[-1][0]
