"""Sessions that follow conversations: one kept session per conversation, across turns and processes.

A chat server answers many conversations, each over many turns, often in
different processes. The tool outputs a model was shown as handles in turn 1
must still read back in turn 20 and after a restart, and never from another
conversation. :class:`Conversations` gives each conversation key (a LangGraph
thread id, an Agents SDK session id, a chat id) its own kept session, named
from the key, reopened on every later turn and removed once unused for
``keep_for``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import xxhash

from toolctx._checks import real_number, whole_number
from toolctx._defaults import resolve_context_dir
from toolctx._internal import internal_error
from toolctx.errors import ConfigError, SessionNotFoundError
from toolctx.sessions._gc import gc
from toolctx.sessions._session import ContextSession

__all__ = ["Conversations", "conversation_key"]

_PREFIX = "conv-"
_SESSION_OPTIONS = frozenset({"threshold", "memory_budget", "durable", "store", "redact", "on_debug", "close_timeout"})


def conversation_key(conversation: object) -> str:
    """The key of ``conversation``: a non-empty string as it is, or the ``session_id`` of a session object.

    An Agents SDK ``Session`` (any object with a string ``session_id``) is
    accepted as it is, so the conversation's own store names the toolctx session.
    """
    key = getattr(conversation, "session_id", conversation) if not isinstance(conversation, str) else conversation
    if isinstance(key, int) and not isinstance(key, bool):
        key = str(key)
    if not isinstance(key, str) or not key:
        raise ConfigError(
            f"a conversation is named by a non-empty string (a thread or chat id) or an object with a "
            f"session_id, got {conversation!r:.80}"
        )
    return key


class Conversations:
    """One kept session per conversation, reopened on every turn, in any process, until unused for ``keep_for``.

    ``get(key)`` (or calling the object) returns the conversation's session: the
    one open in this process, else the one a previous turn kept (``resume``), else
    a new one. The session's id is derived from the key (``conv-`` and a 128-bit
    hash), so every process finds it. In a local folder, a conversation open in
    another live process raises :class:`~toolctx.SessionBusyError`; with
    ``store="s3://bucket/prefix"`` (an object store every worker reaches, see
    :class:`ContextSession`) no lock is held, and any worker serves any turn while
    others have the conversation open. Handles read back only in the session that
    stored them, so one conversation never reads another's outputs.

    Use it as the ``session`` of an adapter (``ToolContextMiddleware(session=...)``
    picks the session by the LangGraph thread id), or around a run with
    :meth:`open` (``with conversations.open(sdk_session): await Runner.run(...)``).

    ``context_dir``: where the conversations' sessions live (by default a
    ``conversations`` folder in the usual context directory); conversations not
    used for ``keep_for`` (a timedelta or seconds, 7 days by default) are removed
    from it, with everything else in it that toolctx kept (not yet from an object
    store: the application deletes those objects). At most ``max_open``
    sessions stay open in this process; the least recently used are closed (their
    files stay). Other keyword options are those of :class:`ContextSession`;
    ``threshold`` defaults to 0 here, so every output is on disk once saved.
    """

    def __init__(
        self,
        context_dir: str | os.PathLike[str] | None = None,
        *,
        keep_for: float | timedelta = timedelta(days=7),
        max_open: int = 64,
        **session_options: Any,
    ) -> None:
        unknown = set(session_options) - _SESSION_OPTIONS
        if unknown:
            raise ConfigError(
                f"unknown session option(s) {sorted(unknown)}; Conversations takes {sorted(_SESSION_OPTIONS)}"
            )
        self.context_dir = (
            resolve_context_dir(None) / "conversations" if context_dir is None else resolve_context_dir(context_dir)
        )
        seconds = keep_for.total_seconds() if isinstance(keep_for, timedelta) else keep_for
        self.keep_for = real_number("keep_for (a timedelta or seconds)", seconds, minimum=0.0, unit="seconds")
        self.max_open = whole_number("max_open", max_open, minimum=1, unit="sessions")
        # On disk as soon as saved: a handle shown in this turn must read back after a crash or a restart.
        self._options = {"threshold": 0, **session_options}
        self._open: OrderedDict[str, ContextSession] = OrderedDict()
        self._active: dict[str, int] = {}  # session id -> how many open() blocks use it now
        self._lock = threading.RLock()
        self._last_gc = 0.0
        self._pid = os.getpid()
        _register(self)

    def __repr__(self) -> str:
        return f"<Conversations in {str(self.context_dir)!r}, {len(self._open)} open>"

    @staticmethod
    def session_id(conversation: object) -> str:
        """The id of the session that holds ``conversation``'s tool outputs."""
        return _PREFIX + xxhash.xxh3_128_hexdigest(conversation_key(conversation).encode("utf-8", "surrogatepass"))

    def get(self, conversation: object) -> ContextSession:
        """The session of ``conversation`` (a key or a session object), opened, reopened or made as needed."""
        session_id = self.session_id(conversation)
        with self._lock:
            found = self._open.get(session_id)
            if found is not None and not found.closed:
                self._open.move_to_end(session_id)
                return found
            self._collect_if_due()
            try:
                found = ContextSession.resume(session_id, self.context_dir, keep=True, **self._options)
            except SessionNotFoundError:
                found = ContextSession(self.context_dir, session_id=session_id, keep=True, **self._options)
            found.conversation = conversation_key(conversation)
            self._open[session_id] = found
            self._touch(found)
            self._close_least_used()
            return found

    __call__ = get

    @contextlib.contextmanager
    def open(self, conversation: object) -> Iterator[ContextSession]:
        """Make ``conversation``'s session the current one for the block, without ending it afterwards.

        Tools decorated with ``@persist_context`` and adapters left on the current
        session store the block's calls in the conversation, and read back from it.
        """
        session = self.get(conversation)
        with self._lock:
            self._active[session.session_id] = self._active.get(session.session_id, 0) + 1
        token = session.activate()
        try:
            yield session
        finally:
            session.deactivate(token)
            with self._lock:
                left = self._active[session.session_id] - 1
                if left:
                    self._active[session.session_id] = left
                else:
                    del self._active[session.session_id]
                self._touch(session)

    def delete(self, conversation: object) -> bool:
        """Delete everything ``conversation`` stored (the application deleted the thread); False if nothing.

        Works the same on a local folder and an object store. A conversation in use by
        an :meth:`open` block here is refused (:class:`~toolctx.ConfigError`); one held
        by another live process on a local folder raises :class:`~toolctx.SessionBusyError`.
        """
        session_id = self.session_id(conversation)
        with self._lock:
            if session_id in self._active:
                raise ConfigError(f"conversation {conversation_key(conversation)!r} is in use by an open() block")
            found = self._open.pop(session_id, None)
        if found is not None and not found.closed:
            found.close()  # (kept: its files stay, and are removed below with the rest)
        try:
            doomed = ContextSession.resume(session_id, self.context_dir, keep=False, **self._options)
        except SessionNotFoundError:
            return False
        doomed.close()  # (not kept: closing removes everything it stored)
        return True

    def close(self) -> None:
        """Close every conversation open in this process; their files stay for the next turn."""
        with self._lock:
            sessions, self._open = list(self._open.values()), OrderedDict()
        for session in sessions:
            try:
                session.close()
            except Exception as exc:
                internal_error(f"could not close conversation session {session.session_id}", exc)

    def collect(self) -> list[str]:
        """Remove the conversations not used for ``keep_for``; returns their session ids.

        Conversations open in any live process are never touched. Runs by itself
        at most once an hour, when a conversation is opened.
        """
        self._last_gc = time.monotonic()
        removed = gc(self.context_dir, older_than=self.keep_for, include_kept=True)
        return [path.name for path in removed]

    # -- internals -------------------------------------------------------------------------

    def _collect_if_due(self) -> None:
        if self._last_gc and time.monotonic() - self._last_gc < 3600:
            return
        try:
            self.collect()
        except Exception as exc:
            internal_error(f"could not remove old conversations in {self.context_dir}", exc)

    def _close_least_used(self) -> None:
        for session_id in list(self._open):
            if len(self._open) <= self.max_open:
                return
            if session_id in self._active:
                continue  # in use by an open() block: closing it would end the block's session
            self._open.pop(session_id).close()

    @staticmethod
    def _touch(session: ContextSession) -> None:
        """Mark the conversation used now, so removal by age counts from its last turn."""
        with contextlib.suppress(OSError):
            os.utime(session.session_dir)


_OPEN: weakref.WeakSet[Conversations] = weakref.WeakSet()
_exit_hook_registered = False


def _register(conversations: Conversations) -> None:
    global _exit_hook_registered
    if not _exit_hook_registered:
        atexit.register(_close_all)
        _exit_hook_registered = True
    _OPEN.add(conversations)


def _close_all() -> None:
    """Close open conversations when the interpreter exits, so the next process finds them complete.

    A forked child that exits leaves its parent's conversations alone: it shares their locks.
    """
    for conversations in list(_OPEN):
        if conversations._pid == os.getpid():
            conversations.close()
