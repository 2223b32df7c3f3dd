"""toolctx: keep an agent's context small without losing any tool output.

Decorate tools with :func:`persist_context`; every call's arguments and result are
stored in the current :func:`session` (small results in memory, large ones on
disk), indexed by query and task, selectable by relevance, and deleted when the
session ends.

From need to door (each package's own docstring maps its names the same way):

- store tool calls, select and read them back: :func:`persist_context`,
  :func:`session` / :class:`ContextSession`, :class:`Conversations` (one session per
  conversation, across turns and processes), :func:`gc`; the session's doors for
  neighbours and kept-session reading: ``toolctx.sessions``;
- what the model is shown of tool calls (stand-ins, the tool-time rule, compaction,
  ``read_context``): :mod:`toolctx.compaction`; framework adapters:
  ``toolctx_langchain``, ``toolctx_openai_agents``;
- assemble every model call (system prompt, history, plugins, priority shedding):
  :mod:`toolctx.assembly`;
- a fresh, budgeted context per task for a coding agent: :mod:`toolctx.fresh`;
- tiered long-lived memory (HOT/WARM/COLD, flash save): :mod:`toolctx.memory`, served
  over HTTP by :mod:`toolctx.server`;
- relevance strategies: :mod:`toolctx.selection`; where outputs are stored:
  :mod:`toolctx.storage`; secrets: :mod:`toolctx.redaction`; token counts:
  :mod:`toolctx.tokens`; testing your agent: :mod:`toolctx.testing`; reporting the
  way toolctx does: :mod:`toolctx.diagnostics`.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from toolctx._decorator import persist_context
from toolctx._hashing import hash_query
from toolctx.errors import (
    ConfigError,
    HandleError,
    SessionBusyError,
    SessionClosedError,
    SessionError,
    SessionNotFoundError,
    StorageError,
    ToolctxError,
    ToolctxWarning,
)
from toolctx.models import CallMetadata, ContextPointer, ErrorInfo, StorageKind, StoredContext
from toolctx.sessions import ContextSession, Conversations, current_session, gc, session

try:
    __version__ = _metadata.version("toolctx")
except _metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = [
    "CallMetadata",
    "ConfigError",
    "ContextPointer",
    "ContextSession",
    "Conversations",
    "ErrorInfo",
    "HandleError",
    "SessionBusyError",
    "SessionClosedError",
    "SessionError",
    "SessionNotFoundError",
    "StorageError",
    "StorageKind",
    "StoredContext",
    "ToolctxError",
    "ToolctxWarning",
    "__version__",
    "current_session",
    "gc",
    "hash_query",
    "persist_context",
    "session",
]
