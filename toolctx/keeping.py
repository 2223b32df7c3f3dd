"""The save path: where a call's output is kept, and moving it when memory runs out.

:class:`Keeping` is the part of :class:`~toolctx.sessions.ContextSession` that
stores calls. A result under the threshold is kept in memory, within the memory
budget; the oldest in-memory outputs are spilled to the store when the budget is
exceeded; larger results are written to the store at once. Every document that
reaches the store is listed in the manifest.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xxhash

from toolctx._internal import DEBUG, internal_error, log_enabled
from toolctx._vars import active_tags
from toolctx.errors import SessionClosedError
from toolctx.hashing import hash_bytes
from toolctx.models import ErrorInfo, StorageKind
from toolctx.naming import MANIFEST_NAME
from toolctx.records import INDEX_PREVIEW_CHARS, PREVIEW_CHARS, Payload, Record, error_info, preview_of
from toolctx.redaction import Redactor
from toolctx.selection import SearchIndex
from toolctx.serialize import encode
from toolctx.storage import BlobStore
from toolctx.tokens import estimate_tokens

__all__ = ["Keeping"]

_MEMORY, _DISK, _NONE = StorageKind.MEMORY, StorageKind.DISK, StorageKind.NONE
_LONG_PREVIEWS = 4096  # unsearched calls whose long index preview is queued (about 4 MB)


class Keeping:
    """Storing calls; mixed into ContextSession, which sets up the state below."""

    session_id: str
    threshold: int
    memory_budget: int
    _closed: bool
    _lock: threading.Lock
    _records: dict[str, Record]
    _memory: OrderedDict[str, Record]
    _memory_bytes: int
    _written: dict[str, str]
    _calls: dict[str, str]
    _ids: Iterator[int]
    _rand: str
    _store: BlobStore
    _redactor: Redactor | None
    _index: SearchIndex
    _on_debug: Callable[[str, dict[str, Any]], None] | None

    if TYPE_CHECKING:

        @property
        def session_dir(self) -> Path: ...

        def _event(self, level: int, event: str, **data: Any) -> None: ...

    def _save(
        self,
        tool_name: str,
        safe_name: str,
        args_json: bytes,
        description: str | None,
        result: Any,
        error: BaseException | ErrorInfo | None,
        threshold: int | None,
        task_id: int | str | None = None,
        query_id: str | None = None,
        order: tuple[str, ...] = (),
        args_notes: tuple[str, ...] = (),
        call_id: str | None = None,
    ) -> Record:
        """The one save path: the decorator and :meth:`save_context` both end here.

        ``args_json`` is the canonical JSON of the bound arguments. Secrets are
        redacted from it and from the result before anything is kept, and the
        arguments are hashed after redaction, so no hash depends on a secret. Text
        arguments must already be valid UTF-8 (``clean_text``); both callers see to
        that once, outside this hot path.
        """
        if self._closed:
            raise SessionClosedError(f"session {self.session_id} has ended; open a new one with toolctx.session()")
        if task_id is None or query_id is None:
            tags = active_tags.get()
            if task_id is None:
                task_id = tags.task_id
            if query_id is None:
                query_id = tags.query_id
        data, notes = encode(result)
        encoded = data
        redactor = self._redactor
        if redactor is not None:
            args_json, data = redactor.redact_call(args_json, data)
        args_json = memoryview(args_json).tobytes()  # kept for the record's life: exact size, not orjson's buffer
        args_hash = hash_bytes(args_json)
        if error is not None:
            error = error_info(error, redactor)
        if args_notes:
            notes = tuple(f"arguments: {note}" for note in args_notes) + notes
        size = len(data)
        timestamp_ns = time.time_ns()
        counter = next(self._ids)  # atomic under the GIL: no lock needed to number calls
        rand = self._rand
        # A plain string result previews as itself, unless redaction changed it.
        plain = isinstance(result, str) and data is encoded and not notes
        record = Record(
            f"{rand}{counter:x}", counter, rand, tool_name, safe_name, description, args_json, args_hash,
            timestamp_ns, task_id, query_id, size, _NONE, error is not None, None, order,
            estimate_tokens(data), None, plain, call_id,
        )  # fmt: skip
        index = self._index
        if size < (self.threshold if threshold is None else threshold) and self.memory_budget:
            # orjson's buffers are over-allocated: keep an exact-size copy. The preview and
            # the index's text come from it when needed: nothing is copied twice.
            self._keep_in_memory(record, (args_json, memoryview(data).tobytes(), error, notes))
            index.add(record.id, record.search_text, record.index_text, record.tokens)
        else:
            # The output leaves memory: capture what the index and the pointer need now. Past a
            # backlog of calls never searched, the index gets only the pointer's 200 characters.
            preview = preview_of(result if plain else None, data, INDEX_PREVIEW_CHARS)
            record._preview = preview[:PREVIEW_CHARS]
            self._keep_on_disk(record, (args_json, data, error, notes))
            index.add(
                record.id,
                record.search_text,
                preview if index.backlog < _LONG_PREVIEWS else record._preview,
                record.tokens,
            )
        if call_id is not None:
            self._calls[call_id] = record.id
        if self._on_debug is not None or log_enabled(DEBUG):
            self._event(DEBUG, "saved", id=record.id, tool=tool_name, size=size, storage=str(record.storage))
        if len(notes) > len(args_notes):  # arguments in fallback form are noted in the document only
            internal_error(
                f"the result of tool {tool_name!r} is not plain JSON; stored in toolctx's fallback form: "
                + "; ".join(notes[len(args_notes) :]),
                id=record.id,
            )
        return record

    def _keep_in_memory(self, record: Record, payload: Payload) -> None:
        record.storage = _MEMORY
        record.payload = payload
        lock = self._lock
        lock.acquire()  # (cheaper than ``with`` on this hot path)
        try:
            self._records[record.id] = record
            self._memory[record.id] = record
            self._memory_bytes += record.size + len(record.args_json)
            evicted = self._evict_over_budget() if self._memory_bytes > self.memory_budget else None
        finally:
            lock.release()
        if evicted:
            self._spill(evicted)

    def _keep_on_disk(self, record: Record, payload: Payload) -> None:
        # A repeated call with the same arguments and the same result shares the file
        # already written for it instead of writing an identical one again.
        error, data = payload[2], payload[1]
        same = None if error is not None else f"{record.safe_name}:{record.args_hash}:{xxhash.xxh3_128_hexdigest(data)}"
        existing = self._written.get(same) if same is not None else None
        if existing is not None:
            record._filename = existing
            record.on_disk()
            self._append_manifest(record)
        else:
            self._write(record, payload)
            if same is not None and record.storage is _DISK:
                self._written[same] = record.filename
        with self._lock:
            self._records[record.id] = record

    def _evict_over_budget(self) -> list[Record]:
        """Pop the oldest in-memory records until the budget holds (caller holds the lock)."""
        evicted: list[Record] = []
        while self._memory_bytes > self.memory_budget and self._memory:
            _, oldest = self._memory.popitem(last=False)
            self._memory_bytes -= oldest.size + len(oldest.args_json)
            evicted.append(oldest)
        return evicted

    def _write(self, record: Record, payload: Payload) -> None:
        """Write a record's document to the store and the manifest; on failure mark it unstored."""
        try:
            self._store.put(record.filename, record.document(self.session_id, payload))
        except Exception as exc:
            record.storage = _NONE
            internal_error(
                f"could not store the output of tool {record.tool_name!r} in {str(self.session_dir)!r}; "
                "the tool's result was returned unchanged but is not stored",
                exc,
                id=record.id,
            )
            return
        record.on_disk()
        self._append_manifest(record)

    def _append_manifest(self, record: Record) -> None:
        try:
            self._store.append(MANIFEST_NAME, record.manifest_line())
        except Exception as exc:
            internal_error(
                f"could not add context {record.id} to the session manifest; it is stored but "
                "resume() will find it only by scanning the directory",
                exc,
            )

    def _spill(self, records: list[Record]) -> None:
        """Move in-memory outputs to the store; any that fail stay in memory."""
        failed: list[Record] = []
        for record in records:
            payload = record.payload
            if payload is None:
                continue
            try:
                self._store.put(record.filename, record.document(self.session_id, payload))
            except Exception as exc:
                failed.append(record)
                internal_error(
                    f"could not spill context {record.id} to {str(self.session_dir)!r}; it stays in memory",
                    exc,
                )
                continue
            record.on_disk()
            self._append_manifest(record)
            self._event(DEBUG, "spilled", id=record.id, size=record.size)
        if failed:
            with self._lock:
                for record in failed:
                    if record.id in self._records:
                        self._memory[record.id] = record
                        self._memory_bytes += record.size + len(record.args_json)
