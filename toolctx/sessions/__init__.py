"""Sessions: where tool calls are stored, and which session a call lands in.

Users:

- :class:`ContextSession` (also spelled :func:`session`) stores calls, selects and
  loads them, and cleans up when it ends;
- :func:`current_session` is the session calls made here go to;
- :func:`reset_default_session` ends the process-wide default session;
- :class:`Conversations` keeps one session per conversation, across turns and processes;
- :func:`list_sessions`, :func:`session_pointers` and :func:`read_session_context`
  read session folders on disk (kept, in use or orphaned) without taking them over;
- :func:`gc` removes the folders crashed processes left behind.

Neighbours (the decorator, compaction, the adapters, the testing helpers) use the
session's recorder doors, and nothing behind them:

- record a call now: :meth:`ContextSession.record_call` (a :class:`SavedCall`
  receipt), or later with the calls queued before it:
  :meth:`ContextSession.record_call_later`; the decorator hands a :class:`Call` to
  :attr:`ContextSession.save_path` (a :class:`SavePath`) directly;
- read a call's parts by its framework id: :meth:`ContextSession.call_parts`
  (:class:`CallParts`);
- resolve handles passed as arguments (``content="ctx:<id>#lines=10-40"``) within a
  conversation: :func:`resolve_arguments`, :func:`resolve_reference`,
  :func:`parse_reference` (a :class:`Reference`), the scope an adapter sets around a
  tool call: :func:`reference_scope` (read by :func:`host_scope`), the calls a read
  reaches when given no scope: :func:`ambient_scope`, and for a scope: :func:`within`; a stored call's
  text as a model reads it: :func:`stored_text`, :func:`argument_text`;
- keep per-session state: :meth:`ContextSession.attached` (in this process),
  :meth:`ContextSession.note` / :meth:`ContextSession.noted` (stored with the session);
- :func:`open_sessions` and :func:`stamping_clock` for tests.
"""

from __future__ import annotations

from toolctx.sessions._clock import stamping_clock
from toolctx.sessions._conversations import Conversations, conversation_key
from toolctx.sessions._core import OnDebug
from toolctx.sessions._current import current_session, reset_default_session, session
from toolctx.sessions._gc import gc
from toolctx.sessions._kept import SessionState, SessionSummary, list_sessions, read_session_context, session_pointers
from toolctx.sessions._loading import ContextRef
from toolctx.sessions._lookups import ResultPage
from toolctx.sessions._recording import SavedCall
from toolctx.sessions._records import Call, CallParts
from toolctx.sessions._references import (
    Reference,
    Scope,
    Where,
    ambient_scope,
    argument_text,
    host_scope,
    parse_reference,
    reference_scope,
    resolve_arguments,
    resolve_reference,
    stored_text,
    within,
)
from toolctx.sessions._saving import SavePath
from toolctx.sessions._session import ContextSession, open_sessions

__all__ = [
    "Call",
    "CallParts",
    "ContextRef",
    "ContextSession",
    "Conversations",
    "OnDebug",
    "Reference",
    "ResultPage",
    "SavePath",
    "SavedCall",
    "Scope",
    "SessionState",
    "SessionSummary",
    "Where",
    "ambient_scope",
    "argument_text",
    "conversation_key",
    "current_session",
    "gc",
    "host_scope",
    "list_sessions",
    "open_sessions",
    "parse_reference",
    "read_session_context",
    "reference_scope",
    "reset_default_session",
    "resolve_arguments",
    "resolve_reference",
    "session",
    "session_pointers",
    "stamping_clock",
    "stored_text",
    "within",
]
