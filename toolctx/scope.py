"""Which session a tool call lands in: ``session()``, ``current_session()`` and the default.

The current session is a context variable, so it follows asyncio tasks and
``contextvars``-aware thread pools (LangChain's and the Agents SDK's executors,
``asyncio.to_thread``). Outside any ``with session():`` a process-wide default
session is created on first use and cleaned up when the interpreter exits.
"""

from __future__ import annotations

import atexit
import threading

from toolctx._vars import active_session, sole_entered_session
from toolctx.sessions import ContextSession

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


session = ContextSession
"""``session(...)`` makes a :class:`ContextSession`; use it as ``with session(...) as s:``."""
