"""ContextSession: stores tool calls, indexes them, loads them back, cleans up.

A session keeps one lightweight record per stored call. The call's full document
(metadata plus the JSON result) lives either in memory, when the result is small
and the memory budget allows, or in the session's blob store: by default the
directory ``<context_dir>/<session_id>/``. The memory budget is enforced by
spilling the oldest in-memory documents to the store, so memory stays bounded
however long the session runs. Every document that reaches the store is also
listed in an append-only manifest, from which :meth:`ContextSession.resume`
rebuilds a kept session.

The session a tool call lands in is found through a context variable set by
``with session():``; it follows asyncio tasks and ``contextvars``-aware thread
pools (LangChain's and the Agents SDK's executors, ``asyncio.to_thread``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import random
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple, Self

import orjson

from toolctx._internal import DEBUG, WARNING, internal_error, log, log_enabled
from toolctx.describe import default_description
from toolctx.errors import ConfigError, SessionClosedError
from toolctx.hashing import hash_args, hash_query
from toolctx.models import FORMAT, ContextPointer, ErrorInfo, StorageKind, StoredContext
from toolctx.naming import (
    MANIFEST_NAME,
    context_filename,
    new_session_id,
    parse_context_filename,
    pointer_id,
    sanitize_tool_name,
    validate_session_id,
)
from toolctx.selection import select_keyword
from toolctx.serialize import Encoded, clean_text, encode
from toolctx.storage import BlobStore, LocalStore

__all__ = [
    "DEFAULT_CONTEXT_DIR",
    "DEFAULT_MEMORY_BUDGET",
    "DEFAULT_THRESHOLD",
    "ContextRef",
    "ContextSession",
    "current_session",
    "session",
]

DEFAULT_THRESHOLD = 32 * 1024
"""Results whose JSON form is at least this many bytes go straight to the store."""
DEFAULT_MEMORY_BUDGET = 4 * 1024 * 1024
"""Bytes of stored documents a session keeps in memory before spilling the oldest."""
DEFAULT_CONTEXT_DIR = "~/.agent/context"
"""Used when neither ``context_dir`` nor ``TOOLCTX_CONTEXT_DIR`` is given."""
ARGS_INLINE_LIMIT = 1024
"""Pointers keep arguments whole up to this many JSON bytes and shorten larger ones."""

ContextRef = ContextPointer | str | os.PathLike[str]
"""What load and selection accept: a pointer, its id (``"ctx:"`` prefix allowed) or a file path."""

OnDebug = Callable[[str, dict[str, Any]], None]


class _Tags(NamedTuple):
    query_id: str | None = None
    task_id: int | str | None = None


_current: ContextVar[ContextSession | None] = ContextVar("toolctx_session", default=None)
_tags: ContextVar[_Tags] = ContextVar("toolctx_tags", default=_Tags())  # noqa: B039 - a NamedTuple is immutable


class _Record:
    """What a session remembers about one stored call (pointers are built from it)."""

    __slots__ = (
        "args_hash",
        "args_json",
        "blob",
        "description",
        "filename",
        "id",
        "is_error",
        "query_id",
        "size",
        "storage",
        "task_id",
        "timestamp_ns",
        "tool_name",
    )

    def __init__(
        self,
        id: str,
        tool_name: str,
        description: str,
        args_json: bytes,
        args_hash: str,
        timestamp_ns: int,
        task_id: int | str | None,
        query_id: str | None,
        size: int,
        storage: StorageKind,
        filename: str,
        is_error: bool,
        blob: bytes | None = None,
    ) -> None:
        self.id = id
        self.tool_name = tool_name
        self.description = description
        self.args_json = args_json
        self.args_hash = args_hash
        self.timestamp_ns = timestamp_ns
        self.task_id = task_id
        self.query_id = query_id
        self.size = size
        self.storage = storage
        self.filename = filename
        self.is_error = is_error
        self.blob = blob

    def manifest_line(self) -> bytes:
        return (
            orjson.dumps(
                {
                    "op": "put",
                    "id": self.id,
                    "file": self.filename,
                    "tool_name": self.tool_name,
                    "tool_description": self.description,
                    "args": orjson.Fragment(self.args_json),
                    "args_hash": self.args_hash,
                    "ts": self.timestamp_ns,
                    "task_id": self.task_id,
                    "query_id": self.query_id,
                    "size": self.size,
                    "error": self.is_error,
                }
            )
            + b"\n"
        )

    @classmethod
    def from_manifest(cls, entry: Mapping[str, Any]) -> _Record:
        return cls(
            id=str(entry["id"]),
            tool_name=str(entry["tool_name"]),
            description=str(entry["tool_description"]),
            args_json=orjson.dumps(entry["args"]),
            args_hash=str(entry["args_hash"]),
            timestamp_ns=int(entry["ts"]),
            task_id=entry.get("task_id"),
            query_id=entry.get("query_id"),
            size=int(entry["size"]),
            storage=StorageKind.DISK,
            filename=str(entry["file"]),
            is_error=bool(entry.get("error", False)),
        )


def resolve_context_dir(context_dir: str | os.PathLike[str] | None) -> Path:
    """The absolute context directory: the argument, ``TOOLCTX_CONTEXT_DIR`` or the default."""
    if context_dir is None:
        context_dir = os.environ.get("TOOLCTX_CONTEXT_DIR") or DEFAULT_CONTEXT_DIR
    if not isinstance(context_dir, (str, os.PathLike)) or "\x00" in os.fspath(context_dir):
        raise ConfigError(f"context_dir must be a directory path without NUL bytes, got {context_dir!r:.100}")
    return Path(context_dir).expanduser().absolute()


def _non_negative(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name} must be a whole number of bytes >= 0, got {value!r}")
    return value


class ContextSession:
    """One agent session's stored tool calls.

    Use it through ``with toolctx.session(...) as s:`` so decorated tools find it,
    or on its own (``s.save_context(...)``, ``s.clear()``) like the seed's
    ``ContextManager``. Leaving the ``with`` block deletes everything the session
    stored unless ``keep=True``; a kept session is reopened with :meth:`resume`.

    Thread-safe: tools may save from several threads or tasks at once.
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
        on_debug: OnDebug | None = None,
    ) -> None:
        self._context_dir = resolve_context_dir(context_dir)
        self.session_id = validate_session_id(session_id) if session_id is not None else new_session_id()
        self.threshold = _non_negative("threshold", threshold)
        self.memory_budget = _non_negative("memory_budget", memory_budget)
        self.keep = bool(keep)
        if store is not None and not isinstance(store, BlobStore):
            raise ConfigError(f"store must be a toolctx.storage.BlobStore, got {type(store).__name__}")
        self._store = store if store is not None else LocalStore(self.session_dir, durable=durable)
        if on_debug is not None and not callable(on_debug):
            raise ConfigError(f"on_debug must be a callable taking (event, data), got {on_debug!r:.80}")
        self._on_debug = on_debug
        self._lock = threading.Lock()
        self._records: dict[str, _Record] = {}
        self._memory: OrderedDict[str, _Record] = OrderedDict()
        self._memory_bytes = 0
        self._counter = 0
        self._tokens: list[Any] = []
        self._closed = False

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<ContextSession {self.session_id} {state}, {len(self._records)} contexts in {str(self.session_dir)!r}>"

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
        return self._store

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def size(self) -> int:
        """Number of stored calls (pointers)."""
        return len(self._records)

    def __len__(self) -> int:
        return len(self._records)

    # -- activation ------------------------------------------------------------

    def __enter__(self) -> Self:
        if self._closed:
            raise SessionClosedError(f"session {self.session_id} has ended; open a new one with toolctx.session()")
        self._tokens.append(_current.set(self))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _current.reset(self._tokens.pop())
        if not self._tokens:
            self.close()

    async def __aenter__(self) -> Self:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def close(self) -> None:
        """End the session: delete what it stored, or with ``keep=True`` flush it to the store."""
        if self._closed:
            return
        self._closed = True
        if self.keep:
            with self._lock:
                pending = list(self._memory.values())
                self._memory.clear()
                self._memory_bytes = 0
            self._spill(pending)
            self._store.close()
        else:
            self.clear()
            self._store.close(remove=True)
        self._event(DEBUG, "closed", kept=self.keep, contexts=len(self._records))

    @contextlib.contextmanager
    def query(self, text: str) -> Iterator[str]:
        """Tag calls made inside the block with ``query_id = hash_query(text)``; yields the id."""
        query_id = hash_query(text)
        token = _tags.set(_tags.get()._replace(query_id=query_id))
        try:
            yield query_id
        finally:
            _tags.reset(token)

    @contextlib.contextmanager
    def task(self, task_id: int | str) -> Iterator[int | str]:
        """Tag calls made inside the block with ``task_id``."""
        if isinstance(task_id, bool) or not isinstance(task_id, (int, str)):
            raise ConfigError(f"task_id must be an int or a str, got {task_id!r:.80}")
        token = _tags.set(_tags.get()._replace(task_id=task_id))
        try:
            yield task_id
        finally:
            _tags.reset(token)

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
    ) -> ContextPointer:
        """Store one tool call and return its pointer.

        ``task_id`` and ``query_id`` default to the tags of the enclosing
        :meth:`task` and :meth:`query` blocks. If the output cannot be written, a
        :class:`~toolctx.ToolctxWarning` says why and the pointer's ``storage`` is
        ``"none"``.
        """
        if not isinstance(tool_name, str) or not tool_name:
            raise ConfigError(f"tool_name must be a non-empty str, got {tool_name!r:.80}")
        if not isinstance(args, Mapping):
            raise ConfigError(f"args must be a mapping of argument names to values, got {type(args).__name__}")
        encoded, args_hash = hash_args(args)
        record = self._store_call(
            tool_name=tool_name,
            safe_name=sanitize_tool_name(tool_name),
            args=encoded,
            args_hash=args_hash,
            description=description if description is not None else default_description(tool_name, args),
            result=result,
            error=error,
            threshold=None if threshold is None else _non_negative("threshold", threshold),
            task_id=task_id,
            query_id=query_id,
        )
        return self._pointer(record)

    def _store_call(
        self,
        *,
        tool_name: str,
        safe_name: str,
        args: Encoded,
        args_hash: str,
        description: str,
        result: Any,
        error: BaseException | ErrorInfo | None,
        threshold: int | None,
        task_id: int | str | None = None,
        query_id: str | None = None,
    ) -> _Record:
        """The one save path: the decorator and :meth:`save_context` both end here."""
        if self._closed:
            raise SessionClosedError(f"session {self.session_id} has ended; open a new one with toolctx.session()")
        if task_id is None or query_id is None:
            tags = _tags.get()
            task_id = tags.task_id if task_id is None else task_id
            query_id = tags.query_id if query_id is None else query_id
        # Names and tags are user text too: keep them encodable whatever comes in.
        tool_name, description = clean_text(tool_name), clean_text(description)
        if isinstance(task_id, str):
            task_id = clean_text(task_id)
        if query_id is not None:
            query_id = clean_text(query_id)
        if error is not None:
            error = _error_info(error)
        body = encode(result)
        timestamp_ns = time.time_ns()
        rand = f"{random.getrandbits(24):06x}"
        with self._lock:
            counter = self._counter
            self._counter += 1
        filename = context_filename(safe_name, args_hash, timestamp_ns // 1_000_000, counter, rand)
        record = _Record(
            id=pointer_id(rand, counter),
            tool_name=tool_name,
            description=description,
            args_json=args.data if len(args.data) <= ARGS_INLINE_LIMIT else _shorten_args(args.data),
            args_hash=args_hash,
            timestamp_ns=timestamp_ns,
            task_id=task_id,
            query_id=query_id,
            size=len(body.data),
            storage=StorageKind.MEMORY,
            filename=filename,
            is_error=error is not None,
        )
        header = orjson.dumps(
            {
                "format": FORMAT,
                "id": record.id,
                "session_id": self.session_id,
                "tool_name": tool_name,
                "tool_description": description,
                "args": orjson.Fragment(args.data),
                "args_hash": args_hash,
                "timestamp": datetime.fromtimestamp(timestamp_ns / 1e9, UTC),
                "task_id": task_id,
                "query_id": query_id,
                "error": None if error is None else error.model_dump(),
                "notes": list(args.notes + body.notes),
            }
        )
        chunks = (header[:-1], b',"result":', body.data, b"}")
        limit = self.threshold if threshold is None else threshold
        if record.size < limit and self.memory_budget > 0:
            record.blob = b"".join(chunks)  # an exact-size copy: orjson's buffers are over-allocated
            with self._lock:
                self._records[record.id] = record
                self._memory[record.id] = record
                self._memory_bytes += len(record.blob)
                evicted = self._evict_over_budget()
            self._spill(evicted)
        else:
            self._write(record, chunks)
            with self._lock:
                self._records[record.id] = record
        if self._on_debug is not None or log_enabled(DEBUG):
            self._event(DEBUG, "saved", id=record.id, tool=tool_name, size=record.size, storage=str(record.storage))
        if body.notes:
            internal_error(
                f"the result of tool {tool_name!r} is not plain JSON; stored in toolctx's fallback form: "
                + "; ".join(body.notes),
                id=record.id,
            )
        return record

    def _evict_over_budget(self) -> list[_Record]:
        """Pop the oldest in-memory records until the budget holds (caller holds the lock)."""
        evicted: list[_Record] = []
        while self._memory_bytes > self.memory_budget and self._memory:
            _, oldest = self._memory.popitem(last=False)
            self._memory_bytes -= len(oldest.blob or b"")
            evicted.append(oldest)
        return evicted

    def _write(self, record: _Record, chunks: Iterable[bytes]) -> None:
        """Write a document to the store and the manifest; on failure mark it unstored."""
        try:
            self._store.put(record.filename, tuple(chunks))
        except Exception as exc:
            record.storage = StorageKind.NONE
            internal_error(
                f"could not store the output of tool {record.tool_name!r} in {str(self.session_dir)!r}; "
                "the tool's result was returned unchanged but is not stored",
                exc,
                id=record.id,
            )
            return
        record.storage = StorageKind.DISK
        self._append_manifest(record)

    def _append_manifest(self, record: _Record) -> None:
        try:
            self._store.append(MANIFEST_NAME, record.manifest_line())
        except Exception as exc:
            internal_error(
                f"could not add context {record.id} to the session manifest; it is stored but "
                "resume() will find it only by scanning the directory",
                exc,
            )

    def _spill(self, records: list[_Record]) -> None:
        """Move in-memory documents to the store; any that fail stay in memory."""
        failed: list[_Record] = []
        for record in records:
            blob = record.blob
            if blob is None:
                continue
            try:
                self._store.put(record.filename, (blob,))
            except Exception as exc:
                failed.append(record)
                internal_error(
                    f"could not spill context {record.id} to {str(self.session_dir)!r}; it stays in memory",
                    exc,
                )
                continue
            record.storage = StorageKind.DISK
            record.blob = None
            self._append_manifest(record)
            self._event(DEBUG, "spilled", id=record.id, size=record.size)
        if failed:
            with self._lock:
                for record in failed:
                    if record.id in self._records:
                        self._memory[record.id] = record
                        self._memory_bytes += len(record.blob or b"")

    # -- reading -----------------------------------------------------------------

    def _pointer(self, record: _Record) -> ContextPointer:
        on_disk = record.storage is StorageKind.DISK
        return ContextPointer(
            id=record.id,
            session_id=self.session_id,
            tool_name=record.tool_name,
            tool_description=record.description,
            args=orjson.loads(record.args_json),
            args_hash=record.args_hash,
            timestamp=datetime.fromtimestamp(record.timestamp_ns / 1e9, UTC),
            task_id=record.task_id,
            query_id=record.query_id,
            size=record.size,
            storage=record.storage,
            filename=record.filename if on_disk else None,
            filepath=self._store.path(record.filename) if on_disk else None,
            is_error=record.is_error,
        )

    def _snapshot(self) -> list[_Record]:
        with self._lock:
            return list(self._records.values())

    def get_all_pointers(self) -> list[ContextPointer]:
        """Every stored call, oldest first (fresh copies)."""
        return [self._pointer(r) for r in self._snapshot()]

    def get_pointers_for_query(self, query_id: str) -> list[ContextPointer]:
        """Calls tagged with ``query_id`` (see :meth:`query` and :meth:`hash_query`)."""
        return [self._pointer(r) for r in self._snapshot() if r.query_id == query_id]

    def get_pointers_for_task(self, task_id: int | str) -> list[ContextPointer]:
        """Calls tagged with ``task_id`` (see :meth:`task`)."""
        return [self._pointer(r) for r in self._snapshot() if r.task_id == task_id]

    def get_pointer(self, ref: ContextRef) -> ContextPointer | None:
        """The current pointer for a pointer, id or path of this session, or None."""
        record = self._resolve(ref)
        return None if record is None else self._pointer(record)

    def select_relevant_contexts(
        self, query: str, k: int | None = None, *, pointers: Iterable[ContextPointer] | None = None
    ) -> list[ContextPointer]:
        """Pointers relevant to ``query``, best first (at most ``k`` when given).

        Keyword overlap between the query and each call's description, falling
        back to all candidates when nothing overlaps. ``pointers`` narrows the
        candidates (for example to :meth:`get_pointers_for_query`).
        """
        if not isinstance(query, str):
            raise ConfigError(f"query must be a str, got {type(query).__name__}")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ConfigError(f"k must be a positive int or None, got {k!r}")
        candidates = self.get_all_pointers() if pointers is None else list(pointers)
        ranked = select_keyword(query, candidates)
        return ranked if k is None else ranked[:k]

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
            context = self._load_one(ref)
            if context is not None:
                loaded.append(context)
        return loaded

    def _load_one(self, ref: ContextRef) -> StoredContext | None:
        if isinstance(ref, ContextPointer) and ref.session_id != self.session_id:
            self._skip(ref.id, f"pointer belongs to session {ref.session_id}, not {self.session_id}")
            return None
        record = self._resolve(ref)
        name: str | None
        if record is not None:
            name = record.filename
            blob = record.blob
        else:
            name = self._path_name(ref.filepath if isinstance(ref, ContextPointer) else ref)
            if name is None:
                self._skip(str(ref), "not a context of this session")
                return None
            blob = None
        try:
            if blob is None:
                blob = self._store.get(name)
            context = _parse_document(blob)
        except Exception as exc:
            self._skip(str(ref), f"{type(exc).__name__}: {exc}")
            return None
        if context.session_id != self.session_id:
            self._skip(str(ref), f"document belongs to session {context.session_id}")
            return None
        self._event(DEBUG, "loaded", id=context.id, tool=context.tool_name)
        return context

    def _resolve(self, ref: ContextRef) -> _Record | None:
        if isinstance(ref, ContextPointer):
            return self._records.get(ref.id)
        if isinstance(ref, str):
            key = ref[4:] if ref.startswith("ctx:") else ref
            record = self._records.get(key)
            if record is not None:
                return record
        name = self._path_name(ref)
        parsed = parse_context_filename(name) if name else None
        return self._records.get(parsed.pointer_id) if parsed else None

    def _path_name(self, ref: object) -> str | None:
        """The file name of ``ref`` if it is a path to a context file of this session."""
        if not isinstance(ref, (str, os.PathLike)):
            return None
        path = Path(ref)
        if not path.is_absolute():
            path = self.session_dir / path
        if parse_context_filename(path.name) is None:
            return None
        store_path = self._store.path(path.name)
        if store_path is None or os.path.realpath(path.parent) != os.path.realpath(Path(store_path).parent):
            return None
        return path.name

    def _skip(self, ref: str, reason: str) -> None:
        self._event(WARNING, "skipped", ref=ref[:200], reason=reason)

    # -- cleanup -------------------------------------------------------------------

    def clear_pointers(self) -> None:
        """Forget every stored call held in memory; files already written stay on disk."""
        with self._lock:
            count = len(self._records)
            self._records.clear()
            self._memory.clear()
            self._memory_bytes = 0
        self._event(DEBUG, "cleared", what="pointers", count=count)

    def clear_context_dir(self) -> None:
        """Delete this session's files (its context files and manifest) and their pointers.

        Only files toolctx names and writes are deleted: anything else in the
        directory, and the ``context_dir`` itself, is left alone.
        """
        with self._lock:
            for key in [k for k, r in self._records.items() if r.storage is not StorageKind.MEMORY]:
                del self._records[key]
        removed = 0
        for name in self._store.list():
            if name == MANIFEST_NAME or parse_context_filename(name) is not None:
                removed += self._store.delete(name)
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
        on_debug: OnDebug | None = None,
    ) -> ContextSession:
        """Reopen a session kept with ``keep=True`` (possibly by a process that has since died).

        Pointers are rebuilt from the manifest; context files the manifest missed
        (a crash between writing a file and listing it) are recovered by reading
        them, and listed entries whose file is gone are dropped. The reopened
        session keeps its files when it ends unless ``keep=False`` is passed.
        """
        session_id = validate_session_id(session_id)
        root = resolve_context_dir(context_dir)
        store = LocalStore(root / session_id, durable=durable, existing=True)
        try:
            resumed = cls(
                root,
                session_id=session_id,
                threshold=threshold,
                memory_budget=memory_budget,
                keep=keep,
                store=store,
                on_debug=on_debug,
            )
            resumed._recover()
        except BaseException:
            store.close()
            raise
        return resumed

    def _recover(self) -> None:
        present = {name for name in self._store.list() if parse_context_filename(name) is not None}
        records: dict[str, _Record] = {}
        try:
            manifest = self._store.get(MANIFEST_NAME)
        except FileNotFoundError:
            manifest = b""
        for line in manifest.splitlines():
            try:
                record = _Record.from_manifest(orjson.loads(line))
            except Exception:
                continue  # a line cut short by a crash, or damaged: the file scan below recovers it
            if record.filename in present:
                records[record.id] = record
        listed = {r.filename for r in records.values()}
        for name in sorted(present - listed):
            try:
                context = _parse_document(self._store.get(name))
            except Exception as exc:
                self._skip(name, f"unreadable context file: {type(exc).__name__}: {exc}")
                continue
            records[context.id] = _record_from_context(context, name)
        ordered = sorted(records.values(), key=lambda r: (r.timestamp_ns, r.id))
        self._records = {r.id: r for r in ordered}
        counters = [parsed.counter for r in ordered if (parsed := parse_context_filename(r.filename))]
        self._counter = max(counters, default=-1) + 1
        self._store.put(MANIFEST_NAME, [r.manifest_line() for r in ordered])
        self._event(DEBUG, "resumed", contexts=len(ordered))

    # -- events ------------------------------------------------------------------------

    def _event(self, level: int, event: str, **data: Any) -> None:
        if self._on_debug is not None:
            try:
                self._on_debug(event, data)
            except Exception as exc:
                internal_error("the on_debug callback raised", exc)
        log(level, event, session=self.session_id, **data)


def _error_info(error: BaseException | ErrorInfo) -> ErrorInfo:
    if isinstance(error, ErrorInfo):
        kind, message, text = error.type, error.message, error.traceback
    else:
        kind, text = type(error).__qualname__, "".join(traceback.format_exception(error))
        try:
            message = str(error)
        except Exception:
            message = f"<str() of {kind} failed>"
    return ErrorInfo(
        type=clean_text(kind),
        message=clean_text(message[:20_000]),
        traceback=None if text is None else clean_text(text[-20_000:]),
    )


def _shorten_args(args_json: bytes) -> bytes:
    """A smaller JSON form of large arguments for pointers; the document keeps them whole."""

    def shrink(value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return value if len(value) <= 200 else value[:200] + f"… [{len(value)} chars]"
        if depth > 3:
            return "…"
        if isinstance(value, list):
            head = [shrink(v, depth + 1) for v in value[:10]]
            return head + ([f"… [{len(value)} items]"] if len(value) > 10 else [])
        if isinstance(value, dict):
            return {k: shrink(v, depth + 1) for k, v in list(value.items())[:20]}
        return value

    data = orjson.dumps(shrink(orjson.loads(args_json), 0))
    if len(data) <= ARGS_INLINE_LIMIT:
        return data
    return orjson.dumps({"$truncated": f"{len(args_json)} bytes of arguments; load the context for all of them"})


def _parse_document(blob: bytes) -> StoredContext:
    document = orjson.loads(blob)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError("not a toolctx context document")
    return StoredContext.model_validate(document)


def _record_from_context(context: StoredContext, filename: str) -> _Record:
    return _Record(
        id=context.id,
        tool_name=context.tool_name,
        description=context.tool_description,
        args_json=_shorten_args(orjson.dumps(context.args)),
        args_hash=context.args_hash,
        timestamp_ns=int(context.timestamp.timestamp() * 1e9),
        task_id=context.task_id,
        query_id=context.query_id,
        size=len(orjson.dumps(context.result)),
        storage=StorageKind.DISK,
        filename=filename,
        is_error=context.error is not None,
    )


# -- the current session ------------------------------------------------------------------

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

    The default session is created on first use (in ``TOOLCTX_CONTEXT_DIR`` or
    ``~/.agent/context``) and cleaned up when the interpreter exits.
    """
    active = _current.get()
    if active is not None and not active._closed:
        return active
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
        on_debug=on_debug,
    )
