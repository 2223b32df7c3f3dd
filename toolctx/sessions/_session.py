"""ContextSession: the façade over a session's save path, lookups, loading and cleanup.

A session owns a save path holding one record per stored call. A call's output
lives either in memory, when its JSON form is under ``threshold`` and the memory
budget allows, or in the session's blob store: by default the directory
``<context_dir>/<session_id>/``. The budget is enforced by spilling the oldest
in-memory outputs to the store, so memory stays bounded however long the session
runs. A kept session also lists everything in the store in an append-only
manifest, from which :meth:`ContextSession.resume` rebuilds it.

The session directory is toolctx's because its first file, the marker
``.toolctx-session``, says so (see :func:`toolctx.storage.read_marker`): a session never
takes over a directory that exists already, and ``resume()`` reopens only one that
carries the marker for its id.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar, Token
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from toolctx._checks import real_number
from toolctx._defaults import DEFAULT_MEMORY_BUDGET, DEFAULT_THRESHOLD, byte_count, resolve_context_dir
from toolctx._hashing import hash_query
from toolctx._internal import DEBUG, internal_error
from toolctx._naming import new_session_id, validate_session_id
from toolctx._platform import fork_safe_lock
from toolctx.errors import ConfigError, SessionClosedError
from toolctx.redaction import Redactor, default_redactor, resolve_redactor
from toolctx.sessions._core import OnDebug
from toolctx.sessions._forks import track
from toolctx.sessions._loading import Loader
from toolctx.sessions._lookups import Lookups
from toolctx.sessions._recording import Recording, checked_task_id
from toolctx.sessions._resume import recover
from toolctx.sessions._saving import SavePath
from toolctx.sessions._stores import store_of
from toolctx.sessions._tags import current_tags
from toolctx.storage import BlobStore, LocalStore

if TYPE_CHECKING:
    from toolctx.index import SessionIndex

__all__ = [
    "DEFAULT_CLOSE_TIMEOUT",
    "ContextSession",
    "active_session",
    "entered_sessions",
    "open_sessions",
    "sole_entered_session",
]

T = TypeVar("T")


DEFAULT_CLOSE_TIMEOUT = 5.0
"""Seconds a session that ends waits for calls other threads are still saving."""

active_session: ContextVar[ContextSession | None] = ContextVar("toolctx_session", default=None)
"""The session of the innermost ``with session()`` block in this context."""

# Context variables follow asyncio tasks and context-copying thread pools, but a plain
# ``threading.Thread`` starts with none of them. For such threads the process-wide list
# of blocks currently entered tells: when one thread entered them all, its innermost
# session is unambiguous.
_entered: list[tuple[ContextSession, int]] = []
_entered_lock = fork_safe_lock()


def sole_entered_session() -> ContextSession | None:
    """The innermost entered session if every entered session belongs to one thread, else None."""
    with _entered_lock:
        if not _entered or any(thread != _entered[0][1] for _, thread in _entered):
            return None
        return _entered[-1][0]


def open_sessions() -> list[ContextSession]:
    """Sessions whose ``with`` block is still open: entered anywhere, or active in this context."""
    found = entered_sessions()
    active = active_session.get()
    if active is not None and not active.closed and all(active is not s for s in found):
        found.append(active)
    return found


def entered_sessions() -> list[ContextSession]:
    """Sessions whose ``with`` block has been entered and not yet left, outermost first."""
    with _entered_lock:
        return [s for s, _ in _entered]


class ContextSession(Recording, Lookups):
    """One agent session's stored tool calls.

    Use it as ``with toolctx.session(...) as s:`` (or ``async with``) so decorated
    tools find it: calls made inside the block, including in asyncio tasks and in
    context-copying worker threads started there, are stored in it. Sessions nest:
    the inner one wins and the outer one is back after the block. Leaving the block
    deletes everything the session stored, unless ``keep=True``; a kept session is
    reopened with :meth:`resume`. It also works on its own (``s.save_context(...)``,
    ``s.clear()``) like the seed's ``ContextManager``.

    ``context_dir``: where session directories go (default ``TOOLCTX_CONTEXT_DIR``,
    else ``~/.agent/context``).
    ``threshold``: results of this many JSON bytes or more go to disk (0 = always).
    ``memory_budget``: bytes kept in memory before the oldest are spilled to disk.
    ``durable``: fsync every write (survives power loss; costs a flush per write).
    ``store``: where outputs that leave memory go instead of the directory: a
    :class:`~toolctx.storage.BlobStore`, or an object store URL
    (``"s3://bucket/prefix"``, ``gs://``, ``az://``; the session's objects go under
    ``<url>/<session id>/``, endpoint and credentials from the provider's usual
    environment variables; ``pip install 'toolctx[s3]'``). Without it,
    ``TOOLCTX_STORE`` names one for every session of the process.
    ``index``: with an object store, a database every worker reaches (``"postgresql://user@host/db"``,
    ``"sqlite:///path.db"`` on one host, a :class:`~toolctx.index.SessionIndex`) that lists the session's
    calls instead of a manifest object, with its notes, expiry and lease (see :class:`Conversations`);
    ``TOOLCTX_INDEX`` names one for every session with an object store.
    ``background_uploads``: with a shared store, an output the adapters show whole is always uploaded
    in the background (read from memory meanwhile), and one given a stand-in before the tool returns;
    with ``True`` that one too, and the next model call waits for it, showing it whole if it failed.
    Off by default: a framework that saves the tool's result before its next model call (a LangGraph
    checkpointer) would keep a handle whose upload a crash cut short.
    ``redact``: remove secrets from arguments and results before storing them (on
    by default; see :mod:`toolctx.redaction`); ``False`` turns it off.
    ``on_debug``: called as ``on_debug(event, data)`` for every event of this session (saved, loaded,
    cleared, closed, ...); toolctx's warnings and internal errors go to its log and ``warnings`` instead.
    ``conversation`` (an attribute, None by default): the conversation the session
    serves alone. :class:`Conversations` sets it; set it on a session opened for one
    conversation. The framework adapters store and read its calls under it when
    the framework names no thread or group, so handles read back across turns;
    without it (and without a thread or group) a run reads back only its own.
    ``close_timeout``: seconds the session, when it ends, waits for calls other
    threads are still saving (5 by default). Calls saved after it ended are refused
    (``SessionClosedError``; decorated tools store them in the current session
    instead). If some are still being saved when the time is up, a warning says so
    and the directory keeps its marker, so :func:`toolctx.gc` removes what they leave.

    Thread-safe: tools may save from several threads or tasks at once, and a
    process may fork while they do.
    """

    def __init__(
        self,
        context_dir: str | os.PathLike[str] | None = None,
        *,
        session_id: str | None = None,
        threshold: int = DEFAULT_THRESHOLD,
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
        keep: bool = False,
        durable: bool = False,
        store: BlobStore | str | None = None,
        index: SessionIndex | str | None = None,
        redact: bool | Redactor = True,
        on_debug: OnDebug | None = None,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
        background_uploads: bool = False,
    ) -> None:
        self._context_dir = resolve_context_dir(context_dir)
        self.session_id = validate_session_id(session_id) if session_id is not None else new_session_id()
        self.keep = bool(keep)
        # The conversation this session serves alone (Conversations sets it; set it for a session opened for
        # one conversation): adapters scope its calls to it when the framework names no thread or group.
        self.conversation: str | None = None
        store = store_of(store, self.session_id, index)
        if on_debug is not None and not callable(on_debug):
            raise ConfigError(f"on_debug must be a callable taking (event, data), got {on_debug!r:.80}")
        self._on_debug = on_debug
        self.close_timeout = real_number("close_timeout", close_timeout, minimum=0.0, unit="seconds")
        kept_in = store if store is not None else LocalStore(self.session_dir, durable=durable, keep=self.keep)
        self._saver = SavePath(
            self.session_id,
            kept_in,
            threshold=byte_count("threshold", threshold),
            memory_budget=byte_count("memory_budget", memory_budget),
            redactor=default_redactor if redact is True else resolve_redactor(redact),  # (default: built on first use)
            emit=self._event,
            always_emit=on_debug is not None,
            where=kept_in.display_location(),
            listing=self.keep,
            background=bool(background_uploads),
        )
        self._loader = Loader(self._saver, self.session_id, self.session_dir, self._skip)
        self._tokens: list[Any] = []
        self._attached: dict[type[Any], Any] = {}
        track(self)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<ContextSession {self.session_id} {state}, {len(self)} contexts in {self.store.display_location()!r}>"

    # -- locations -----------------------------------------------------------

    @property
    def context_dir(self) -> Path:
        """The root directory holding session directories (seed: ``getContextDir``)."""
        return self._context_dir

    @property
    def session_dir(self) -> Path:
        """Where this session's files go: ``<context_dir>/<session_id>/``."""
        return self._context_dir / self.session_id

    @property
    def save_path(self) -> SavePath:
        """Where this session's calls are stored: ``save_path.save(call, result, error)`` is the decorator's door."""
        return self._saver

    @property
    def store(self) -> BlobStore:
        """Where outputs go once they leave memory."""
        return self._saver.store

    @property
    def redactor(self) -> Redactor | None:
        """What removes secrets before anything is stored (None when ``redact=False``)."""
        return self._saver.redactor

    @property
    def threshold(self) -> int:
        """Results of this many JSON bytes or more go to the store."""
        return self._saver.threshold

    @property
    def memory_budget(self) -> int:
        """Bytes of results and arguments kept in memory before the oldest are spilled."""
        return self._saver.memory_budget

    @property
    def closed(self) -> bool:
        """Whether the session has ended."""
        return self._saver.closed

    @property
    def size(self) -> int:
        """Number of stored calls (pointers)."""
        return len(self._saver.records)

    def __len__(self) -> int:
        return len(self._saver.records)

    def calls_taken(self) -> tuple[int, int]:
        """The calls stored and those queued to be stored; changes as the session takes calls (stores nothing)."""
        return self._saver.taken()

    @property
    def memory_bytes(self) -> int:
        """Bytes of results and arguments held in memory now (at most ``memory_budget``)."""
        self._saver.store_queued()
        return self._saver.memory_bytes

    # -- activation ------------------------------------------------------------

    def __enter__(self) -> Self:
        self._tokens.append(self.activate())
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.deactivate(self._tokens.pop())
        if not self._tokens:
            self.close()

    def activate(self) -> Token[ContextSession | None]:
        """Make this the current session, as entering ``with`` does, without ending it afterwards.

        For code that holds a session across turns (:class:`~toolctx.Conversations`):
        give the token back to :meth:`deactivate` in the same context.
        """
        if self.closed:
            raise SessionClosedError(f"session {self.session_id} has ended; open a new one with toolctx.session()")
        token = active_session.set(self)
        with _entered_lock:
            _entered.append((self, threading.get_ident()))
        return token

    def deactivate(self, token: Token[ContextSession | None]) -> None:
        """Undo :meth:`activate` (the session stays open)."""
        active_session.reset(token)
        with _entered_lock:
            for index in range(len(_entered) - 1, -1, -1):
                if _entered[index][0] is self:
                    del _entered[index]
                    break

    async def __aenter__(self) -> Self:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def close(self) -> None:
        """End the session: delete what it stored, or with ``keep=True`` flush it to the store.

        Calls other threads are saving at that moment are waited for, up to
        ``close_timeout`` seconds; later ones are refused.
        """
        saver = self._saver
        still_saving = saver.close(self.close_timeout)
        if still_saving is None:  # closed already
            return
        if still_saving:
            internal_error(
                f"session {self.session_id} ended while {still_saving} call(s) were still being saved after "
                f"{self.close_timeout:g} s; what they write is left for toolctx.gc() to remove"
            )
        if self.keep:
            saver.flush()
            if not saver.listing:  # keep was set after the session started
                saver.write_manifest()
            saver.store.close()
        else:
            try:
                self.clear_context_dir()
                saver.store.close(remove=True)
            except Exception as exc:  # (a store out of reach: the session still ends, and the block's own error wins)
                internal_error(
                    f"could not delete what session {self.session_id} stored in {saver.store.display_location()!r}; "
                    "it is left for toolctx.gc() (a folder) or the store's sweep (object storage)",
                    exc,
                )
                with contextlib.suppress(Exception):  # (said above; what is left stays toolctx's to remove)
                    saver.store.close(remove=True)
            self.clear_pointers()
        self._event(DEBUG, "closed", kept=self.keep, contexts=len(saver.records))

    @contextlib.contextmanager
    def query(self, text: str) -> Iterator[str]:
        """Tag calls made inside the block with ``query_id = hash_query(text)``; yields the id."""
        if not isinstance(text, str):
            raise ConfigError(f"query() takes the user's question as a str, got {type(text).__name__}: {text!r:.80}")
        query_id = hash_query(text)
        token = current_tags.set(current_tags.get()._replace(query_id=query_id))
        try:
            yield query_id
        finally:
            current_tags.reset(token)

    @contextlib.contextmanager
    def task(self, task_id: int | str) -> Iterator[int | str]:
        """Tag calls made inside the block with ``task_id``."""
        task_id = checked_task_id(task_id)
        token = current_tags.set(current_tags.get()._replace(task_id=task_id))
        try:
            yield task_id
        finally:
            current_tags.reset(token)

    hash_query = staticmethod(hash_query)

    # -- what neighbours keep with the session -----------------------------------------

    def note(self, word: str) -> None:
        """Remember ``word`` about this session with it, so a resumed session still knows it (never raises).

        A note that cannot be written (the session closed under its caller, a full
        disk) is written when this process opens the session again.
        """
        try:
            self._saver.store.note(word)
        except Exception as exc:
            _unwritten_notes.add((self.session_id, word))
            internal_error(
                f"could not note {word!r} with session {self.session_id}; it is noted when this process resumes it",
                exc,
            )

    def noted(self, word: str) -> bool | None:
        """Whether ``word`` was noted about this session (:meth:`note`); None if it cannot tell."""
        if (self.session_id, word) in _unwritten_notes:  # (noted by an earlier session of this id here)
            _unwritten_notes.discard((self.session_id, word))
            self.note(word)
            return True
        try:
            return self._saver.store.noted(word)
        except Exception:  # (an unreadable store: the caller guesses)
            return None

    def attached(self, kind: type[T], make: Callable[[ContextSession], T]) -> T:
        """The ``kind`` object kept with this session in this process, made by ``make(self)`` on first use.

        Where a neighbour keeps its per-session state (compaction's notes, say), so it
        lives and dies with the session instead of in a table beside it. Unlike
        :meth:`note`, it is not stored: a resumed session starts without it.
        """
        found: T | None = self._attached.get(kind)
        if found is None:
            found = self._attached.setdefault(kind, make(self))  # (two threads at once: one object wins)
        return found

    # -- cleanup -------------------------------------------------------------------

    def clear_pointers(self) -> None:
        """Forget every stored call held in memory; files already written stay on disk."""
        count = self._saver.forget()
        self._event(DEBUG, "cleared", what="pointers", count=count)

    def clear_context_dir(self) -> None:
        """Delete this session's files (its context files and manifest) and their pointers.

        Only files toolctx names and writes are deleted: anything else in the
        directory, and the ``context_dir`` itself, is left alone.
        """
        removed = self._saver.clear_store()
        self._event(DEBUG, "cleared", what="files", count=removed)

    def clear(self) -> None:
        """Delete everything the session stored, on disk and in memory."""
        self.clear_context_dir()
        self.clear_pointers()

    # -- resume ----------------------------------------------------------------------

    @classmethod
    def resume(
        cls,
        session_id: str,
        context_dir: str | os.PathLike[str] | None = None,
        *,
        keep: bool = True,
        threshold: int = DEFAULT_THRESHOLD,
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
        durable: bool = False,
        store: str | None = None,
        index: SessionIndex | str | None = None,
        redact: bool | Redactor = True,
        on_debug: OnDebug | None = None,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
        background_uploads: bool = False,
    ) -> ContextSession:
        """Reopen a session kept with ``keep=True`` (possibly by a process that has since died).

        ``store``: the object store URL it was kept in (by default ``TOOLCTX_STORE``;
        neither: its directory under ``context_dir``), and ``index`` the database that
        lists its calls (by default ``TOOLCTX_INDEX``). Any process reaching them
        reopens it, and its handles read back there.

        Pointers are rebuilt from the manifest; context files the manifest missed
        (a crash between writing a file and listing it) are recovered by reading
        them, and listed entries whose file is gone are dropped. The reopened
        session keeps its files when it ends unless ``keep=False`` is passed.

        Only a directory toolctx created for this session id is reopened: one
        without its marker (a folder of the user's, say) raises
        :class:`~toolctx.SessionNotFoundError` and nothing in it is changed. A
        directory written before markers existed is recognised by its lock file
        and gets a marker.
        """
        session_id = validate_session_id(session_id)
        root = resolve_context_dir(context_dir)
        kept = store_of(store, session_id, index, existing=True)
        if kept is None:
            kept = LocalStore(root / session_id, durable=durable, existing=True, keep=keep)
        try:
            resumed = cls(
                root,
                session_id=session_id,
                threshold=threshold,
                memory_budget=memory_budget,
                keep=keep,
                store=kept,
                redact=redact,
                on_debug=on_debug,
                close_timeout=close_timeout,
                background_uploads=background_uploads,
            )
            resumed._recover()
        except BaseException:
            kept.close()
            raise
        return resumed

    def _recover(self) -> None:
        ordered = recover(self._saver.store, self.session_id, self._skip)
        self._saver.restore(ordered)
        self._event(DEBUG, "resumed", contexts=len(ordered))


# (session id, word) of notes this process could not write with their session: written when it resumes it.
_unwritten_notes: set[tuple[str, str]] = set()
