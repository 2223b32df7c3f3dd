"""Helpers for testing code that uses toolctx, and the pytest plugin's fixtures.

With toolctx installed, pytest loads its plugin, whose fixtures need no import::

    def test_search_stores_its_result(toolctx_contexts):
        search_code("retry")                      # a @persist_context tool
        [context] = toolctx_contexts.of("search_code")
        assert context.args == {"query": "retry", "limit": 10}

    def test_memory(toolctx_memory, toolctx_clock):
        agent = toolctx_memory.agent("worker")
        agent.save("TASK", "ship it")
        toolctx_clock.advance(hours=6)            # the memory ages without waiting
        agent.update_tiers()

- ``toolctx_clock``: a :class:`FixedClock` at 2025-01-01 00:00 UTC, shared by the
  fixtures below; it moves only when the test moves it;
- ``toolctx_session``: a :func:`fixed_session` (id ``test-session``, its contexts'
  ids ``0000000``, ``0000001``, ..., timestamps from the clock) in a temporary folder,
  current for the test, deleted after it;
- ``toolctx_contexts``: the :class:`CapturedContexts` the test's tools stored in it;
- ``toolctx_memory``: a :class:`~toolctx.memory.MemoryStore` on a SQLite file in a
  temporary folder, on the same clock.

Without the plugin, the same pieces are plain functions::

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
from datetime import UTC, datetime, timedelta
from typing import Any

from toolctx._checks import real_number
from toolctx._internal import escalated
from toolctx._naming import seed_ids
from toolctx.models import ContextPointer, StoredContext
from toolctx.sessions import ContextSession, open_sessions, reset_default_session, stamping_clock

__all__ = [
    "CapturedContexts",
    "FixedClock",
    "escalated_warnings",
    "fixed_session",
    "open_sessions",
    "repeatable_ids",
    "reset",
    "session_for_test",
]

#: The id :func:`fixed_session` gives its session, and the random part of its contexts' ids.
FIXED_SESSION_ID = "test-session"
FIXED_RAND = "000000"


def repeatable_ids(key: str, count: int = 20_000) -> None:
    """Draw the next ``count`` ids (the handles a model is shown) from a generator seeded by ``key``.

    For a replay or benchmark that must give the same token counts on every run: the ids are
    random letters as ever, only the same ones each time. Never in production, where a handle
    must not be guessable. Past ``count`` ids, ids come from the system's random source again.
    """
    seed_ids(key, count)


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


class FixedClock:
    """A clock that stands still until the test moves it (UTC; 2025-01-01 00:00 by default).

    Calling it gives UNIX seconds, so it is a :class:`~toolctx.memory.MemoryConfig`
    ``clock``; :func:`fixed_session` stamps stored calls with it.
    """

    def __init__(self, start: datetime = datetime(2025, 1, 1, tzinfo=UTC)) -> None:
        if not isinstance(start, datetime) or start.tzinfo is None:
            raise TypeError(f"start must be a timezone-aware datetime, not {start!r:.80}")
        self._ns = int(start.timestamp()) * 1_000_000_000 + start.microsecond * 1000

    def __call__(self) -> float:
        return self._ns / 1e9

    def time_ns(self) -> int:
        return self._ns

    def now(self) -> datetime:
        """The clock's time as an aware UTC datetime."""
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=self._ns // 1000)

    def advance(self, seconds: float = 0.0, **delta: float) -> datetime:
        """Move forward by ``seconds`` plus any ``timedelta`` keywords (``hours=6``); returns the new time."""
        step = real_number("seconds", seconds, minimum=0.0, unit="seconds") + timedelta(**delta).total_seconds()
        if step < 0:
            raise ValueError(f"a FixedClock only moves forward, not by {step} seconds")
        self._ns += round(step * 1e9)
        return self.now()


@contextlib.contextmanager
def fixed_session(
    context_dir: str | os.PathLike[str],
    clock: FixedClock | None = None,
    *,
    session_id: str = FIXED_SESSION_ID,
    **options: Any,
) -> Iterator[ContextSession]:
    """:func:`session_for_test` with ids and times a test can write down.

    The session's id is ``session_id``; its contexts' ids are ``000000`` followed by
    their counter in hex (``0000000``, ``0000001``, ...); their timestamps come from
    ``clock`` (a new :class:`FixedClock` if None). The clock stands in for the system
    clock of every session in the process while the block runs: use one at a time.
    """
    clock = clock or FixedClock()
    with stamping_clock(clock.time_ns), session_for_test(context_dir, session_id=session_id, **options) as opened:
        opened.save_path.names.numbered = FIXED_RAND
        yield opened


class CapturedContexts:
    """The contexts a test's tools stored in a session, in the order they were stored.

    ``toolctx_contexts`` is one over the test's ``toolctx_session``; build one yourself
    with ``CapturedContexts(session)``. Only calls made after it was built count.
    """

    def __init__(self, session: ContextSession) -> None:
        self.session = session
        self._before = {p.id for p in session.get_all_pointers()}

    @property
    def pointers(self) -> list[ContextPointer]:
        """Pointers to the stored calls, oldest first."""
        return [p for p in self.session.get_all_pointers() if p.id not in self._before]

    def __len__(self) -> int:
        return len(self.pointers)

    @property
    def tool_names(self) -> list[str]:
        """The tools called, one entry per call, oldest first."""
        return [p.tool_name for p in self.pointers]

    def all(self) -> list[StoredContext]:
        """Every stored call in full (arguments, result or error), oldest first."""
        return self.session.load_contexts(self.pointers)

    def of(self, tool_name: str) -> list[StoredContext]:
        """The stored calls of one tool, oldest first (an empty list if it was never called)."""
        return self.session.load_contexts([p for p in self.pointers if p.tool_name == tool_name])

    def last(self) -> StoredContext:
        """The most recent stored call; an AssertionError says so if there is none."""
        pointers = self.pointers
        if not pointers:
            raise AssertionError("no tool stored a context in this test")
        [context] = self.session.load_contexts(pointers[-1:])
        return context
