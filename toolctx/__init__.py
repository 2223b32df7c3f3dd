"""toolctx: keep an agent's context small without losing any tool output.

Decorate tools with :func:`persist_context`; every call's arguments and result are
stored in the current :func:`session` (small results in memory, large ones on
disk), indexed by query and task, selectable by relevance, and deleted when the
session ends.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from toolctx._decorator import persist_context
from toolctx._hashing import hash_query
from toolctx.errors import (
    ConfigError,
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
