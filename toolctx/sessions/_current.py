"""Which session a tool call lands in: ``current_session()``, the process default and its reset.

The current session is a context variable, so it follows asyncio tasks and
``contextvars``-aware thread pools (LangChain's and the Agents SDK's executors,
``asyncio.to_thread``). Outside any ``with session():`` a process-wide default
session is created on first use and cleaned up when the interpreter exits, or
when :func:`reset_default_session` is called.
"""

from __future__ import annotations

import atexit
import os

from toolctx._platform import fork_safe_lock
from toolctx.sessions._session import ContextSession, active_session, sole_entered_session

__all__ = ["current_session", "reset_default_session", "session"]

_default: ContextSession | None = None
_default_pid = 0  # the process the default session belongs to: a forked child makes its own
_default_lock = fork_safe_lock()
_exit_hook_registered = False


def current_session() -> ContextSession:
    """The session tool calls go to here: the innermost open ``with session()``, else the default.

    A plain ``threading.Thread`` (which inherits no context) uses the innermost
    open session when all open ``with session()`` blocks belong to one thread;
    with sessions open in several threads it cannot tell and uses the default.
    The default session is created on first use (in ``TOOLCTX_CONTEXT_DIR`` or
    ``~/.agent/context``) and cleaned up when the interpreter exits.
    """
    active = active_session.get()
    if active is not None and not active.closed:
        return active
    if active is None:  # no session in this context: a plain worker thread, say
        sole = sole_entered_session()
        if sole is not None and not sole.closed:
            return sole
    global _default, _default_pid, _exit_hook_registered
    with _default_lock:
        if _default is None or _default.closed or _default_pid != os.getpid():
            _default, _default_pid = ContextSession(), os.getpid()
            if not _exit_hook_registered:
                atexit.register(reset_default_session)
                _exit_hook_registered = True
        return _default


def reset_default_session() -> None:
    """End the process-wide default session now, deleting what it stored.

    The next call outside any ``with session()`` starts a new default session (read
    from ``TOOLCTX_CONTEXT_DIR`` again). Sessions opened with ``with session()`` are
    not affected. In a forked child, the parent's default session is left alone
    (the child has its own).
    """
    global _default
    with _default_lock:
        default, _default = _default, None
    if default is not None and _default_pid == os.getpid():
        default.close()


session = ContextSession
"""``session(...)`` makes a :class:`ContextSession`; use it as ``with session(...) as s:``."""
