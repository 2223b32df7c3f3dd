"""ContextSession: the façade over a session's save path, lookups, loading and cleanup.

A session owns a save path holding one record per stored call. A call's output
lives either in memory, when its JSON form is under ``threshold`` and the memory
budget allows, or in the session's blob store: by default the directory
``<context_dir>/<session_id>/``. The budget is enforced by spilling the oldest
in-memory outputs to the store, so memory stays bounded however long the session
runs. A kept session also lists everything in the store in an append-only
manifest, from which :meth:`ContextSession.resume` rebuilds it.

The session directory is toolctx's because its first file, the marker
``.toolctx-session``, says so (see :mod:`toolctx.storage._local`): a session never
takes over a directory that exists already, and ``resume()`` reopens only one that
carries the marker for its id.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar, Token
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple, Self

import orjson

from toolctx._checks import real_number
from toolctx._defaults import DEFAULT_MEMORY_BUDGET, DEFAULT_THRESHOLD, byte_count, resolve_context_dir
from toolctx._hashing import hash_query
from toolctx._internal import DEBUG, WARNING, internal_error, log
from toolctx._naming import (
    new_session_id,
    sanitize_tool_name,
    validate_session_id,
)
from toolctx._platform import fork_safe_lock
from toolctx._serialize import clean_text, encode
from toolctx.errors import ConfigError, SessionClosedError
from toolctx.models import ContextPointer, ErrorInfo, StorageKind, StoredContext
from toolctx.redaction import Redactor, resolve_redactor
from toolctx.selection import MIN_SCORE_RATIO, SelectionState, as_strategy, select
from toolctx.selection._base import Candidates, pointer_tokens, utc_now
from toolctx.sessions._loading import ContextRef, Loader
from toolctx.sessions._records import Call, CallParts, Record
from toolctx.sessions._resume import recover
from toolctx.sessions._saving import SavePath, current_tags
from toolctx.storage import BlobStore, LocalStore

__all__ = ["DEFAULT_CLOSE_TIMEOUT", "ContextRef", "ContextSession", "OnDebug", "active_session", "sole_entered_session"]


OnDebug = Callable[[str, dict[str, Any]], None]

DEFAULT_CLOSE_TIMEOUT = 5.0
"""Seconds a session that ends waits for calls other threads are still saving."""

_DISK = StorageKind.DISK

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


def entered_sessions() -> list[ContextSession]:
    """Sessions whose ``with`` block has been entered and not yet left, outermost first."""
    with _entered_lock:
        return [s for s, _ in _entered]


@functools.lru_cache(maxsize=256)
def _tool_names(tool_name: str) -> tuple[str, str]:
    """A tool's name as stored and in its file-name-safe form (the same few names come on every call)."""
    return clean_text(tool_name), sanitize_tool_name(tool_name)


class ContextSession:
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
    ``store``: a :class:`~toolctx.storage.BlobStore` to use instead of the directory.
    ``redact``: remove secrets from arguments and results before storing them (on
    by default; see :mod:`toolctx.redaction`); ``False`` turns it off.
    ``on_debug``: called as ``on_debug(event, data)`` for every event toolctx logs.
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
        store: BlobStore | None = None,
        redact: bool | Redactor = True,
        on_debug: OnDebug | None = None,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        self._context_dir = resolve_context_dir(context_dir)
        self.session_id = validate_session_id(session_id) if session_id is not None else new_session_id()
        self.keep = bool(keep)
        if store is not None and not isinstance(store, BlobStore):
            raise ConfigError(f"store must be a toolctx.storage.BlobStore, got {type(store).__name__}")
        if on_debug is not None and not callable(on_debug):
            raise ConfigError(f"on_debug must be a callable taking (event, data), got {on_debug!r:.80}")
        self._on_debug = on_debug
        self.close_timeout = real_number("close_timeout", close_timeout, minimum=0.0, unit="seconds")
        self._saver = SavePath(
            self.session_id,
            store if store is not None else LocalStore(self.session_dir, durable=durable, keep=self.keep),
            threshold=byte_count("threshold", threshold),
            memory_budget=byte_count("memory_budget", memory_budget),
            redactor=resolve_redactor(redact),
            emit=self._event,
            always_emit=on_debug is not None,
            where=str(self.session_dir),
            listing=self.keep,
        )
        self._loader = Loader(self._saver, self.session_id, self.session_dir, self._skip)
        self._tokens: list[Any] = []
        _track(self)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<ContextSession {self.session_id} {state}, {len(self)} contexts in {str(self.session_dir)!r}>"

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

    @property
    def memory_bytes(self) -> int:
        """Bytes of results and arguments held in memory now (at most ``memory_budget``)."""
        self._saver.store_queued()
        return self._saver.memory_bytes

    # -- activation ------------------------------------------------------------

    def __enter__(self) -> Self:
        self._tokens.append(self._activate())
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._deactivate(self._tokens.pop())
        if not self._tokens:
            self.close()

    def _activate(self) -> Token[ContextSession | None]:
        """Make this the current session (what ``with`` does, without ending it afterwards)."""
        if self.closed:
            raise SessionClosedError(f"session {self.session_id} has ended; open a new one with toolctx.session()")
        token = active_session.set(self)
        with _entered_lock:
            _entered.append((self, threading.get_ident()))
        return token

    def _deactivate(self, token: Token[ContextSession | None]) -> None:
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
            self.clear()
            saver.store.close(remove=True)
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
        task_id = _task_id(task_id)
        token = current_tags.set(current_tags.get()._replace(task_id=task_id))
        try:
            yield task_id
        finally:
            current_tags.reset(token)

    hash_query = staticmethod(hash_query)

    # -- saving ----------------------------------------------------------------

    def save_context(
        self,
        tool_name: str,
        args: Mapping[str, Any],
        result: Any,
        task_id: int | str | None = None,
        query_id: str | None = None,
        *,
        description: str | None = None,
        error: BaseException | ErrorInfo | None = None,
        threshold: int | None = None,
        call_id: str | None = None,
    ) -> ContextPointer:
        """Store one tool call and return its pointer.

        ``task_id`` and ``query_id`` default to the tags of the enclosing
        :meth:`task` and :meth:`query` blocks. If the output cannot be written, a
        :class:`~toolctx.ToolctxWarning` says why and the pointer's ``storage`` is
        ``"none"``. ``call_id`` is the framework's id for the call (adapters set it),
        found again with :meth:`find_call`.
        """
        record = self._save(
            tool_name,
            args,
            result,
            task_id,
            query_id,
            description=description,
            error=error,
            threshold=threshold,
            call_id=call_id,
        )
        return self._pointer(record)

    def _save(
        self,
        tool_name: str,
        args: Mapping[str, Any] | _Encoded,
        result: Any,
        task_id: int | str | None = None,
        query_id: str | None = None,
        *,
        description: str | None = None,
        error: BaseException | ErrorInfo | None = None,
        threshold: int | None = None,
        call_id: str | None = None,
        timestamp_ns: int | None = None,
    ) -> Record:
        """:meth:`save_context` without making the pointer (the adapters' path: they need the id only).

        ``args`` may come encoded already (a queued call's, see :meth:`_save_later`).
        """
        task_id = _checked_call(tool_name, args, task_id, query_id, call_id)
        if description is not None and not isinstance(description, str):
            raise ConfigError(f"description must be a str, got {type(description).__name__}")
        args_json, args_notes, order = args if isinstance(args, _Encoded) else _Encoded.of(args)  # (queued: done)
        redactor = self._saver.redactor
        if description is not None and redactor is not None:
            description = redactor.redact_text(description)
        call = Call(
            *_tool_names(tool_name),
            args_json,
            args_notes,
            order=order,
            description=None if description is None else clean_text(description),
            threshold=None if threshold is None else byte_count("threshold", threshold),
            task_id=task_id,
            query_id=None if query_id is None else clean_text(query_id),
            call_id=None if call_id is None else clean_text(call_id),
        )
        return self._saver.save(call, result, error, timestamp_ns)

    def _save_later(
        self,
        tool_name: str,
        args: Mapping[str, Any],
        result: str,
        task_id: int | str | None = None,
        query_id: str | None = None,
        *,
        call_id: str | None = None,
    ) -> None:
        """:meth:`_save`, done with the calls queued before it as soon as anything reads the session.

        For a tool hook whose output the model is shown whole: storing the calls of
        a few hooks in one go costs less than storing each on its own while the
        agent loop has left the caches cold. The call keeps its tags and time of
        now. A plain dict of arguments is encoded now (it may be the framework's
        own, changed later); another mapping must not change until it is stored
        (arguments parsed for the call when first read). A result whose JSON may
        go to disk at once (up to 6 bytes a character may reach ``threshold``; a
        session with ``threshold=0``, as :class:`~toolctx.Conversations` opens) is
        stored now.
        """
        task_id = _checked_call(tool_name, args, task_id, query_id, call_id)  # (said now, not when stored)
        saver = self._saver
        # (its JSON may go to disk at once: at most 6 bytes a character, an escaped control character)
        if not saver.memory_budget or 6 * len(result) + 2 >= saver.threshold:
            self._save(tool_name, args, result, task_id, query_id, call_id=call_id)  # (kept there now, as before)
            return
        kept: Mapping[str, Any] | _Encoded = args
        if type(args) is dict:
            encoded = _Encoded.of(args)
            kept = encoded._replace(json=memoryview(encoded.json).tobytes())  # (held a while: not orjson's buffer)
        save = functools.partial(
            self._save, tool_name, kept, result, task_id, query_id, call_id=call_id, timestamp_ns=time.time_ns()
        )
        saver.queue(save)

    # -- reading -----------------------------------------------------------------

    def _pointer(self, record: Record) -> ContextPointer:
        path = self._saver.store.path(record.filename) if record.storage is _DISK else None
        return record.pointer(self.session_id, path)

    def _snapshot(self) -> list[Record]:
        return self._saver.snapshot()

    def get_all_pointers(self) -> list[ContextPointer]:
        """Every stored call, oldest first (fresh copies)."""
        return [self._pointer(r) for r in self._snapshot()]

    def get_pointers_for_query(self, query_id: str) -> list[ContextPointer]:
        """Calls tagged with ``query_id`` (see :meth:`query` and :meth:`hash_query`)."""
        return [self._pointer(r) for r in self._snapshot() if r.call.query_id == query_id]

    def get_pointers_for_task(self, task_id: int | str) -> list[ContextPointer]:
        """Calls tagged with ``task_id`` (see :meth:`task`)."""
        return [self._pointer(r) for r in self._snapshot() if r.call.task_id == task_id]

    def find_call(self, call_id: str) -> ContextPointer | None:
        """The pointer stored with this framework call id (the latest, if several), or None."""
        if not isinstance(call_id, str):
            raise ConfigError(f"call_id must be a str, got {type(call_id).__name__}: {call_id!r:.80}")
        saver = self._saver
        record = saver.records.get(saver.calls.get(call_id, ""))
        return None if record is None else self._pointer(record)

    def load_call(self, call_id: str) -> StoredContext | None:
        """The call stored with this framework call id (the latest), loaded in full; None if none was stored.

        ``load_contexts([find_call(call_id)])`` without making the pointer. A call whose
        output could not be written, or whose file cannot be read, is None too: tell
        the two apart with :meth:`find_call`.
        """
        if not isinstance(call_id, str):
            raise ConfigError(f"call_id must be a str, got {type(call_id).__name__}: {call_id!r:.80}")
        saver = self._saver
        record = saver.records.get(saver.calls.get(call_id, ""))
        if record is None or record.storage is StorageKind.NONE:
            return None
        return next(iter(self.load_contexts([record.id])), None)

    def _note(self, word: str) -> None:
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

    def _noted(self, word: str) -> bool | None:
        """Whether ``word`` was noted about this session (:meth:`_note`); None if it cannot tell."""
        if (self.session_id, word) in _unwritten_notes:  # (noted by an earlier session of this id here)
            _unwritten_notes.discard((self.session_id, word))
            self._note(word)
            return True
        try:
            return self._saver.store.noted(word)
        except Exception:  # (an unreadable store: the caller guesses)
            return None

    def _call_parts(self, call_id: str) -> CallParts | None:
        """What :meth:`load_call` gives of the call, read straight from memory while its output is there.

        Compaction reads every call it stands in for back: this is its path, without
        the context's metadata (description, timestamp) it does not use.
        """
        saver = self._saver
        record = saver.records.get(saver.calls.get(call_id, ""))
        return None if record is None else self._parts(record)

    def _parts(self, record: Record) -> CallParts | None:
        """:meth:`_call_parts` of a record of this session (None if its output is not stored)."""
        if record.storage is StorageKind.NONE:
            return None
        args_json = record.call.args_json  # read before the payload: moving it to the store shortens it after
        payload = record.payload
        if payload is None:
            context = next(iter(self.load_contexts([record.id])), None)
            if context is None:
                return None
            return CallParts(
                context.id, context.tool_name, context.task_id, context.args, context.result, context.error
            )
        call = record.call
        return CallParts(
            record.id, call.tool_name, call.task_id, orjson.loads(args_json), orjson.loads(payload[0]), payload[1]
        )

    def get_pointer(self, ref: ContextRef) -> ContextPointer | None:
        """The current pointer for a pointer, id or path of this session, or None."""
        record = self._loader.resolve(ref)
        return None if record is None else self._pointer(record)

    def select_relevant_contexts(
        self,
        query: str,
        k: int | None = None,
        budget_tokens: int | None = None,
        strategy: object = None,
        *,
        pointers: Iterable[ContextPointer] | None = None,
        min_score_ratio: float = MIN_SCORE_RATIO,
        token_counter: Callable[[ContextPointer], int] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> list[ContextPointer]:
        """The stored calls relevant to ``query``, best first.

        ``strategy`` is ``"bm25"`` (the default: BM25 over tool name, description,
        arguments and the start of each result), ``"keyword"`` (the seed's keyword
        overlap, falling back to all pointers), ``"recency"``, a strategy from
        :mod:`toolctx.selection` (combinable: ``bm25() * 0.8 + recency() * 0.2``) or
        any callable taking the selection state.

        ``k`` caps the count; without it, pointers scoring under ``min_score_ratio``
        of the best are left out. ``budget_tokens`` caps the sum of the chosen
        pointers' token estimates. A query of stop words only (nothing to match)
        returns the most recent pointers first. ``pointers`` narrows the candidates;
        pointers of another session among them are skipped with a logged warning.
        """
        if not isinstance(query, str):
            raise ConfigError(f"query must be a str, got {type(query).__name__}")
        if not query.strip():
            raise ConfigError("query is empty: pass the question the stored outputs should answer")
        chosen_strategy = as_strategy("bm25" if strategy is None else strategy)
        state = SelectionState(
            query=query,
            candidates=self._candidates(pointers),
            k=k,
            budget_tokens=budget_tokens,
            token_counter=token_counter or pointer_tokens,
            clock=clock or utc_now,
            index=self._saver.index,
        )
        return select(state, chosen_strategy, min_score_ratio)

    def _candidates(self, pointers: Iterable[ContextPointer] | None) -> Candidates:
        """All of this session's calls (pointers built only when needed), or the given ones."""

        if pointers is None:
            self._saver.store_queued()  # (not under the lock below: storing takes it)
            with self._saver.lock:
                # Clearing replaces the records dict instead of emptying it, so these are the records
                # as they stood now, whatever a clear() in another thread does while the selection runs.
                records = self._saver._records
                ids = list(records)

            def make(pointer_id: str) -> ContextPointer:
                # (an index search may also find a call saved after a clear: it is in the new records)
                record = records.get(pointer_id) or self._saver.records[pointer_id]
                return self._pointer(record)

            return Candidates(ids, make, everything=True)
        chosen: list[ContextPointer] = []
        for pointer in pointers:
            if not isinstance(pointer, ContextPointer):
                raise ConfigError(f"pointers must be ContextPointer objects, got {type(pointer).__name__}")
            if pointer.session_id != self.session_id or pointer.id not in self._saver.records:
                self._skip(pointer.id, f"pointer of session {pointer.session_id} is not a context of this session")
                continue
            chosen.append(pointer)
        return Candidates.of(chosen)

    def load_contexts(self, refs: Iterable[ContextRef]) -> list[StoredContext]:
        """Load stored calls in full, in the order given.

        Accepts pointers, pointer ids (``"ctx:"`` prefix allowed) and paths of this
        session's files. Anything missing, unreadable, malformed or belonging to
        another session is skipped with a logged warning.
        """
        if isinstance(refs, (str, bytes, os.PathLike, ContextPointer)):
            raise ConfigError("load_contexts() takes a list of pointers, ids or paths; wrap a single one in a list")
        loaded: list[StoredContext] = []
        for ref in refs:
            context = self._loader.load(ref)
            if context is not None:
                self._event(DEBUG, "loaded", id=context.id, tool=context.tool_name)
                loaded.append(context)
        return loaded

    def _skip(self, ref: str, reason: str) -> None:
        self._event(WARNING, "skipped", ref=ref[:200], reason=reason)

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
        redact: bool | Redactor = True,
        on_debug: OnDebug | None = None,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> ContextSession:
        """Reopen a session kept with ``keep=True`` (possibly by a process that has since died).

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
        store = LocalStore(root / session_id, durable=durable, existing=True, keep=keep)
        try:
            resumed = cls(
                root,
                session_id=session_id,
                threshold=threshold,
                memory_budget=memory_budget,
                keep=keep,
                store=store,
                redact=redact,
                on_debug=on_debug,
                close_timeout=close_timeout,
            )
            resumed._recover()
        except BaseException:
            store.close()
            raise
        return resumed

    def _recover(self) -> None:
        ordered = recover(self._saver.store, self.session_id, self._skip)
        self._saver.restore(ordered)
        self._event(DEBUG, "resumed", contexts=len(ordered))

    # -- events and forks -------------------------------------------------------------------

    def _event(self, level: int, event: str, **data: Any) -> None:
        if self._on_debug is not None:
            try:
                self._on_debug(event, data)
            except Exception as exc:
                internal_error("the on_debug callback raised", exc)
        log(level, event, session=self.session_id, **data)


_live_sessions: weakref.WeakSet[ContextSession] = weakref.WeakSet()
_fork_hook_registered = False


def _track(session: ContextSession) -> None:
    """Remember live sessions so a forked child can reseed them (hook registered on first use)."""
    global _fork_hook_registered
    if not _fork_hook_registered and hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_store_queues_before_fork, after_in_child=_reseed_after_fork)
        _fork_hook_registered = True
    _live_sessions.add(session)


def _store_queues_before_fork() -> None:
    """Store the calls the sessions queued, so a forked child has them too (waiting at most a second)."""
    for live in list(_live_sessions):
        try:
            live._saver.store_queued(timeout=1.0)
        except Exception as exc:  # (never in the way of the fork)
            internal_error("could not store the queued calls before a fork; the child will not have them", exc)


def _reseed_after_fork() -> None:
    for live in list(_live_sessions):
        live._saver.after_fork()


# (session id, word) of notes this process could not write with their session: written when it resumes it.
_unwritten_notes: set[tuple[str, str]] = set()


class _Encoded(NamedTuple):
    """A call's arguments as stored (a queued call's are encoded when it is queued)."""

    json: bytes
    notes: tuple[str, ...]
    order: tuple[str, ...]

    @staticmethod
    def of(args: Mapping[str, Any]) -> _Encoded:
        """``args`` as stored: their JSON with sorted keys (as hashed), its notes, and the names in order."""
        if type(args) is not dict:  # (a mapping of another kind: stored as the dict it reads as)
            args = dict(args)
        json, notes = encode(args, sort_keys=True)
        return _Encoded(json, notes, tuple(k for k in args if isinstance(k, str)))


def _checked_call(
    tool_name: object, args: object, task_id: object, query_id: object, call_id: object
) -> int | str | None:
    """A call as saving it needs (a non-empty name, a mapping, str ids or None); returns its task id as stored."""
    if not isinstance(tool_name, str) or not tool_name:
        raise ConfigError(f"tool_name must be a non-empty str, got {tool_name!r:.80}")
    if not isinstance(args, (Mapping, _Encoded)):  # (_Encoded: a queued call's, checked when queued)
        raise ConfigError(f"args must be a mapping of argument names to values, got {type(args).__name__}")
    for name, value in (("query_id", query_id), ("call_id", call_id)):
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{name} must be a str or None, got {type(value).__name__}: {value!r:.80}")
    return None if task_id is None else _task_id(task_id)


def _task_id(value: object) -> int | str:
    """A task id as stored: an int, or a str made valid UTF-8."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(f"task_id must be an int or a str, got {type(value).__name__}: {value!r:.80}")
    return clean_text(value) if isinstance(value, str) else value
