"""Helpers for testing code that uses toolctx.

::

    import toolctx.testing

    @pytest.fixture
    def tool_session(tmp_path):
        with toolctx.testing.session_for_test(tmp_path) as s:
            yield s

    @pytest.fixture(autouse=True)
    def _clean_toolctx():
        yield
        toolctx.testing.reset()
        assert toolctx.testing.escalated_warnings() == []

:func:`session_for_test` opens a session in a directory of the test's and checks,
when it ends, that the test left no other session open; :func:`reset` ends the
process-wide default session and reports sessions a test left open;
:func:`escalated_warnings` returns the toolctx warnings that a ``-W error`` filter
turned into errors, which toolctx holds back rather than raise into a tool call.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from toolctx._internal import escalated
from toolctx.sessions import ContextSession, reset_default_session
from toolctx.sessions._session import active_session, entered_sessions

__all__ = ["escalated_warnings", "open_sessions", "reset", "session_for_test"]


def open_sessions() -> list[ContextSession]:
    """Sessions whose ``with`` block is still open: entered anywhere, or active in this context."""
    found = entered_sessions()
    active = active_session.get()
    if active is not None and not active.closed and all(active is not s for s in found):
        found.append(active)
    return found


def escalated_warnings() -> list[str]:
    """The toolctx warnings a filter escalated to errors since the last call, oldest first.

    Persisting never breaks a tool: under ``python -W error`` or pytest's
    ``filterwarnings = error``, a :class:`toolctx.ToolctxWarning` is not raised into
    the tool call but logged and kept here (the newest 1,000). Assert that this is
    empty after each test to fail on them all the same.
    """
    return escalated()


def reset() -> list[ContextSession]:
    """End the process-wide default session (deleting what it stored); returns the sessions left open.

    Call it after each test. The returned list names any ``with session()`` block a
    test entered and never left: assert that it is empty to catch such leaks.
    """
    reset_default_session()
    return open_sessions()


@contextlib.contextmanager
def session_for_test(context_dir: str | os.PathLike[str], **options: Any) -> Iterator[ContextSession]:
    """A session in ``context_dir``, entered for the block (``options`` as for ``session()``).

    On leaving, the session ends (and deletes its files unless ``keep=True``), and
    an ``AssertionError`` is raised if the block left another session open.
    """
    before = open_sessions()
    with ContextSession(context_dir, **options) as opened:
        yield opened
    leaked = [s for s in open_sessions() if all(s is not b for b in before)]
    if leaked:
        raise AssertionError(f"sessions left open inside the test session: {leaked!r}")
