"""Sessions: where tool calls are stored, and which session a call lands in.

- :class:`ContextSession` (also spelled :func:`session`) stores calls, selects and
  loads them, and cleans up when it ends;
- :func:`current_session` is the session calls made here go to;
- :func:`reset_default_session` ends the process-wide default session;
- :class:`Conversations` keeps one session per conversation, across turns and processes;
- :func:`list_sessions`, :func:`session_pointers` and :func:`read_session_context`
  read session folders on disk (kept, in use or orphaned) without taking them over;
- :func:`gc` removes the folders crashed processes left behind.
"""

from __future__ import annotations

from toolctx.sessions._conversations import Conversations, conversation_key
from toolctx.sessions._current import current_session, reset_default_session, session
from toolctx.sessions._gc import gc
from toolctx.sessions._kept import SessionState, SessionSummary, list_sessions, read_session_context, session_pointers
from toolctx.sessions._loading import ContextRef
from toolctx.sessions._session import ContextSession, OnDebug

__all__ = [
    "ContextRef",
    "ContextSession",
    "Conversations",
    "OnDebug",
    "SessionState",
    "SessionSummary",
    "conversation_key",
    "current_session",
    "gc",
    "list_sessions",
    "read_session_context",
    "reset_default_session",
    "session",
    "session_pointers",
]
