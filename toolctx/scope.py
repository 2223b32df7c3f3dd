"""Which session a tool call lands in: ``session()``, ``current_session()`` and the default.

The current session is a context variable, so it follows asyncio tasks and
``contextvars``-aware thread pools (LangChain's and the Agents SDK's executors,
``asyncio.to_thread``). Outside any ``with session():`` a process-wide default
session is created on first use and cleaned up when the interpreter exits.
"""

from __future__ import annotations

import atexit
import os
import threading

from toolctx._vars import active_session, sole_entered_session
from toolctx.options import DEFAULT_MEMORY_BUDGET, DEFAULT_THRESHOLD
from toolctx.redaction import Redactor
from toolctx.sessions import ContextSession, OnDebug
from toolctx.storage import BlobStore

__all__ = ["current_session", "session"]

_default: ContextSession | None = None
_default_lock = threading.Lock()


def _close_default() -> None:
    global _default
    with _default_lock:
        default, _default = _default, None
    if default is not None:
        default.close()


def current_session() -> ContextSession:
    """The session tool calls go to here: the innermost open ``with session()``, else the default.

    A plain ``threading.Thread`` (which inherits no context) uses the innermost
    open session when all open ``with session()`` blocks belong to one thread;
    with sessions open in several threads it cannot tell and uses the default.
    The default session is created on first use (in ``TOOLCTX_CONTEXT_DIR`` or
    ``~/.agent/context``) and cleaned up when the interpreter exits.
    """
    active = active_session.get()
    if active is not None and not active._closed:
        return active
    if active is None:  # no session in this context: a plain worker thread, say
        sole = sole_entered_session()
        if sole is not None and not sole._closed:
            return sole
    global _default
    with _default_lock:
        if _default is None or _default._closed:
            _default = ContextSession()
            atexit.register(_close_default)
        return _default


def session(
    context_dir: str | os.PathLike[str] | None = None,
    *,
    session_id: str | None = None,
    threshold: int = DEFAULT_THRESHOLD,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    keep: bool = False,
    durable: bool = False,
    store: BlobStore | None = None,
    redact: bool | Redactor = True,
    on_debug: OnDebug | None = None,
) -> ContextSession:
    """A new session, to use as ``with session(...) as s:`` or ``async with``.

    Tool calls made inside the block, including in asyncio tasks and in
    context-copying worker threads started there, are stored in it. Sessions
    nest: the inner one wins and the outer one is back after the block. On exit
    the session deletes everything it stored, unless ``keep=True``.

    ``threshold``: results of this many JSON bytes or more go to disk (0 = always).
    ``memory_budget``: bytes kept in memory before the oldest are spilled to disk.
    ``durable``: fsync every write (survives power loss; costs a flush per write).
    ``store``: a :class:`~toolctx.storage.BlobStore` to use instead of the directory.
    ``redact``: remove secrets from arguments and results before storing them (on
    by default; see :mod:`toolctx.redaction`); ``False`` turns it off.
    ``on_debug``: called as ``on_debug(event, data)`` for every event toolctx logs.
    """
    return ContextSession(
        context_dir,
        session_id=session_id,
        threshold=threshold,
        memory_budget=memory_budget,
        keep=keep,
        durable=durable,
        store=store,
        redact=redact,
        on_debug=on_debug,
    )
