"""What the adapters of one session tell each other: stand-ins shown, the conversation's size, the question."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

from toolctx._hashing import hash_query
from toolctx.sessions import ContextSession, current_session

__all__ = ["Notes", "SessionSource", "notes", "session_resolver"]

SessionSource = ContextSession | Callable[[], ContextSession] | None
"""Where an adapter finds its session: a fixed one, a function returning one, or None for the current one."""


def session_resolver(session: SessionSource) -> Callable[[], ContextSession]:
    """A function giving the session to use: a fixed one, a factory, or the current session."""
    if session is None:
        return current_session
    if isinstance(session, ContextSession):
        return lambda: session
    if callable(session):
        return session
    raise TypeError(f"session must be a toolctx ContextSession, a function returning one, or None; got {session!r:.80}")


@dataclass
class Notes:
    """Per session: whether the model may need ``read_context``, and the question tool calls answer."""

    offer_read_context: bool = False
    query_id: str | None = None

    def question(self, text: str | None) -> None:
        self.query_id = None if text is None else hash_query(text)


_NOTES: weakref.WeakKeyDictionary[ContextSession, Notes] = weakref.WeakKeyDictionary()


def notes(session: ContextSession) -> Notes:
    """The notes kept for ``session`` (made on first use, gone with the session)."""
    found = _NOTES.get(session)
    if found is None:
        found = _NOTES.setdefault(session, Notes())
    return found
