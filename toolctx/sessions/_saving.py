"""The save path: where a call's output is kept, and moving it when memory runs out.

A :class:`SavePath` belongs to one session and holds its records. A result under
the threshold is kept in memory, within the memory budget; the oldest in-memory
outputs are spilled to the store when the budget is exceeded; larger results are
written to the store at once (asked on an event loop's thread, by a pool thread,
read from memory until it lands). A kept session lists every stored document in
the manifest. Closing waits, a bounded time, for calls being saved. Per call the
result is serialised, screened and hashed once; names, previews and search text
are built when something asks for them.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import xxhash
from xxhash import xxh3_64_hexdigest

from toolctx._defaults import INDEX_PREVIEW_CHARS, PREVIEW_CHARS
from toolctx._internal import DEBUG, internal_error, log_enabled
from toolctx._naming import HEAD_BYTES, MANIFEST_NAME, is_own_file
from toolctx._platform import fork_safe_lock
from toolctx._serialize import encode
from toolctx.errors import SessionClosedError
from toolctx.models import ErrorInfo, StorageKind
from toolctx.redaction import Redactor
from toolctx.selection import SearchIndex
from toolctx.sessions._clock import clock
from toolctx.sessions._holding import Holding
from toolctx.sessions._names import CallNames
from toolctx.sessions._queue import LaterSaves
from toolctx.sessions._records import Call, Payload, Record, error_info, preview_of
from toolctx.sessions._screening import CallScreen
from toolctx.sessions._spans import result_spans
from toolctx.sessions._tags import current_tags
from toolctx.sessions._uploads import Uploads, deferred, deferring, on_event_loop
from toolctx.storage import BlobStore
from toolctx.telemetry import events
from toolctx.tokens import estimate_tokens

__all__ = ["SavePath"]

_MEMORY, _DISK, _NONE = StorageKind.MEMORY, StorageKind.DISK, StorageKind.NONE
_LONG_PREVIEWS = 4096  # unsearched calls whose long index preview is queued (about 4 MB)
_QUEUED = 64  # calls queue() holds at most: the next one stores them (a session nothing reads stays bounded)

Emit = Callable[..., None]


class SavePath(Holding):
    """Stores one session's calls and holds its records (thread-safe)."""

    def __init__(
        self,
        session_id: str,
        store: BlobStore,
        *,
        threshold: int,
        memory_budget: int,
        redactor: Redactor | Callable[[], Redactor] | None,
        emit: Emit,
        always_emit: bool,
        where: str,
        listing: bool,
        background: bool = False,
    ) -> None:
        self.session_id = session_id
        self.store = store
        self.threshold, self.memory_budget = threshold, memory_budget
        self._index = SearchIndex()
        self.closed = False
        self.lock = fork_safe_lock()
        self._saving: list[None] = []  # one entry per call between save()'s (or queue()'s) start and end
        self._idle = threading.Condition(self.lock)
        self._closing = False  # close() has begun: queue() refuses, save() still stores
        self._later = LaterSaves()  # calls queue() took, stored in order before anything reads the records
        self._records: dict[str, Record] = {}
        self.memory_bytes = 0
        self._generation = 0  # changes each time the store is cleared
        self._memory: deque[Record] = deque()  # outputs held in memory, oldest first
        self._cached: deque[Record] = deque()  # stored outputs of a remote store also in memory, oldest first
        self.cached_bytes = 0
        self._written: dict[str, str] = {}  # identical-output key -> file already holding it
        self._screen = None if redactor is None else CallScreen(redactor)
        self.names = CallNames()
        self.uploads = Uploads()  # writes to a shared store under way, off the tool's path
        self.background = background  # (see ContextSession's background_uploads)
        self.failed_writes = 0  # outputs that could not be stored (or, in a shared store, listed): shown whole
        self._emit = emit
        self._always_emit = always_emit  # an on_debug callback wants every event, logged or not
        self._where = where
        # The manifest serves resume(): only a session that is kept lists its files as it goes.
        self.listing = listing

    @property
    def screen(self) -> CallScreen | None:
        """How this session redacts a call before keeping it (None: it keeps calls as they are)."""
        return self._screen

    def queue(self, save: Callable[[], object]) -> None:
        """Take a call to store later: with the others queued, in order, before anything reads the records.

        ``save`` runs in a copy of the caller's context (so the call is tagged as
        it would have been now) and must not raise for a call it could not store
        (it is logged). A tool hook that queues its call does not pay for storing
        it on its own with cold caches: the next reader stores the queue in one go
        (or the call that makes it 64 long, so a session nothing reads stays small).
        """
        saving = self._saving
        saving.append(None)  # (counted in as save() is: close() waits for it, then stores what it queued)
        try:
            if self._closing or self.closed:
                raise SessionClosedError(f"session {self.session_id} has ended; open a new one with toolctx.session()")
            queued = self._later.put(save)
        finally:
            saving.pop()
            if (self._closing or self.closed) and not saving:
                with self.lock:
                    self._idle.notify_all()
        if queued >= _QUEUED:
            self.store_queued()

    def store_queued(self, timeout: float | None = None) -> None:
        """Store the queued calls, oldest first; other threads reading meanwhile wait for them.

        ``timeout``: give up after that many seconds waiting for another thread
        storing them (it stores them all), instead of waiting as long as it takes.
        """
        if self.closed:  # (what is left could only be refused: close() said so when it gave up)
            return
        self._later.run(timeout)

    def save(
        self, call: Call, result: Any, error: BaseException | ErrorInfo | None, timestamp_ns: int | None = None
    ) -> Record:
        """Keep one call: the decorator and ``save_context`` both end here.

        Secrets are redacted from the arguments and the result before anything is
        kept, and the arguments are hashed after redaction, so no hash depends on a
        secret. Text in ``call`` must already be valid UTF-8 (``clean_text``): both
        callers see to that once, outside this hot path.
        """
        if self._later:  # (calls queued before this one are stored before it)
            self.store_queued()
        # Counted in before looking at ``closed``, so close() either sees this call and
        # waits for it, or has set ``closed`` before and the call is refused. (A list's
        # append and pop are atomic: no lock on this hot path.)
        saving = self._saving
        saving.append(None)
        try:
            if self.closed:
                raise SessionClosedError(f"session {self.session_id} has ended; open a new one with toolctx.session()")
            if call.task_id is None or call.query_id is None:
                tags = current_tags.get()
                if call.task_id is None:
                    call.task_id = tags.task_id
                if call.query_id is None:
                    call.query_id = tags.query_id
            data, notes = encode(result)
            encoded = data
            args_json = call.args_json
            redactor = self.redactor
            echoes: tuple[str, ...] = ()
            if self._screen is not None:
                args_json, data, echoes = self._screen.screen(call, data)
            # Kept for the record's life: an exact-size copy, not orjson's over-allocated buffer.
            args_json = call.args_json = b"".join((args_json, b""))  # (join makes a new exact-size bytes: cheapest)
            if error is not None:
                error = error_info(error, redactor, echoes)
            if call.args_notes:
                notes = tuple(f"arguments: {note}" for note in call.args_notes) + notes
            size = len(data)
            # A plain string result previews as itself, unless redaction changed it.
            plain = isinstance(result, str) and data is encoded and not notes
            pointer, counter = self.names.new(self._records)
            record = Record(
                pointer,
                call,
                xxh3_64_hexdigest(args_json),  # (hash_bytes, written out: this runs on every call)
                clock.time_ns() if timestamp_ns is None else timestamp_ns,
                size,
                error is not None,
                None,  # estimated when first needed: most calls kept in memory never are
                plain,
                counter=counter,
            )
            threshold = self.threshold if call.threshold is None else call.threshold
            if size < threshold and self.memory_budget:
                # The preview and the index's text come from the payload when needed: nothing is copied twice.
                self._keep_in_memory(record, (b"".join((data, b"")), error, notes))
            else:
                # The output leaves memory: capture what the index and the pointer need now. Past a
                # backlog of calls never searched, the index gets only the pointer's 200 characters.
                preview = preview_of(result if plain else None, data, INDEX_PREVIEW_CHARS)
                record.leaving_memory(preview[:PREVIEW_CHARS], estimate_tokens(data))
                indexed = preview if self._index.backlog < _LONG_PREVIEWS else record.preview
                self._keep_on_disk(record, (data, error, notes), indexed)
            if call.call_id is not None:
                self.names.file(record)
            if self._always_emit or log_enabled(DEBUG):
                self._emit(DEBUG, "saved", id=record.id, tool=call.tool_name, size=size, storage=str(record.storage))
            if len(notes) > len(call.args_notes):  # arguments in fallback form are noted in the document only
                internal_error(
                    f"the result of tool {call.tool_name!r} is not plain JSON; stored in toolctx's fallback form: "
                    + "; ".join(notes[len(call.args_notes) :]),
                    id=record.id,
                )
            return events.saved(record, threshold, self.store.shared)
        finally:
            saving.pop()
            if (self._closing or self.closed) and not saving:
                with self.lock:
                    self._idle.notify_all()

    def _keep_in_memory(self, record: Record, payload: Payload) -> None:
        record.storage = _MEMORY
        record.payload = payload
        lock = self.lock
        lock.acquire()  # (cheaper than ``with`` on this hot path)
        try:
            # Registered and indexed under one lock, so that a clear() never leaves one without the other.
            self._records[record.id] = record
            self._index.add_document(record)
            self._memory.append(record)
            self.memory_bytes += record.size + len(record.args_json)
            evicted = self._evict_over_budget() if self.memory_bytes > self.memory_budget else None
        finally:
            lock.release()
        if evicted:
            self.spill(evicted)

    def _keep_on_disk(self, record: Record, payload: Payload, indexed: str) -> None:
        # Written apart, read from memory meanwhile: uploads to a shared store, and any write asked for on an
        # event loop's thread (an async tool or hook), which would stall every other task while the disk works.
        if ((self.background or deferring()) and self.store.shared) or on_event_loop():
            record.payload, record.storage = payload, _MEMORY
            with self.lock:
                self._records[record.id] = record
                self._index.add(record.id, record.search_text, indexed, record.tokens)
            self.uploads.submit(record.id, lambda: self._write_apart(record, payload))
            return
        # A repeated call with the same arguments and the same result shares the file
        # already written for it instead of writing an identical one again.
        data, error = payload[0], payload[1]
        same = None if error is not None else f"{record.safe_name}:{record.args_hash}:{xxhash.xxh3_128_hexdigest(data)}"
        full_args = record.args_json
        while True:
            generation = self._generation
            existing = self._written.get(same) if same is not None else None
            if existing is not None:
                record.in_file(existing)
                self._append_manifest(record)
            else:
                self._write(record, payload)
            with self.lock:
                if generation == self._generation:
                    if existing is None and same is not None and record.storage is _DISK:
                        self._written[same] = record.filename
                    self._records[record.id] = record
                    self._index.add(record.id, record.search_text, indexed, record.tokens)
                    return
            # The store was cleared while this was written, perhaps deleting the file: write it again.
            record.unwritten(full_args)

    def _write_apart(self, record: Record, payload: Payload) -> None:
        """:meth:`_write` off the caller's thread; again if the store was cleared meanwhile (the file deleted)."""
        while True:
            generation = self._generation
            self._write(record, payload)
            with self.lock:
                if generation == self._generation or record.id not in self._records or record.storage is _NONE:
                    return
                record.payload, record.storage = payload, _MEMORY  # (read from memory until written again)

    def _evict_over_budget(self) -> list[Record]:
        """Pop the oldest in-memory records until the budget holds (caller holds the lock)."""
        evicted: list[Record] = []
        while self.memory_bytes > self.memory_budget and self._memory:
            oldest = self._memory.popleft()
            self.memory_bytes -= oldest.size + len(oldest.call.args_json)
            evicted.append(oldest)
        return evicted

    def _write(self, record: Record, payload: Payload) -> None:
        """Write a record's document to the store and the manifest; on failure mark it unstored."""
        try:
            self._put(record, payload)
        except Exception as exc:
            record.storage = _NONE
            self.failed_writes += 1
            events.store_failed(
                self.store.shared,
                f"could not store the output of tool {record.tool_name!r} in {self._where!r}; "
                "the tool's result was returned unchanged but is not stored",
                exc,
                id=record.id,
            )
            return
        record.payload = payload  # (a remote store: read back from memory while it fits; unlisted: shown whole)
        record.on_disk(cached=self.store.shared)
        self._append_manifest(record)
        if self.store.shared and record.storage is _DISK:
            self._cache(record)

    def _put(self, record: Record, payload: Payload) -> None:
        """Write ``record``'s document: in a shared store once, never replacing one, noting where a long string
        result's characters lie (a page of it is then one ranged read); elsewhere as a file of its own."""
        document = record.document(self.session_id, payload)
        if self.store.shared:
            record.spans = result_spans(document)
            self.store.create(record.filename, document)
        else:
            self.store.put(record.filename, document)

    def _cache(self, record: Record) -> None:
        """Keep ``record``'s stored output in memory too, dropping the oldest such copies past the budget."""
        with self.lock:
            self._cached.append(record)
            self.cached_bytes += record.size
            while self.cached_bytes > self.memory_budget and self._cached:
                oldest = self._cached.popleft()
                self.cached_bytes -= oldest.size
                oldest.uncache()

    def _append_manifest(self, record: Record) -> None:
        """List ``record`` in a kept session's manifest (other workers of a shared store find a call by it:
        one not listed there is shown whole instead)."""
        if not self.listing:
            return
        try:
            self.store.append(MANIFEST_NAME, record.manifest_line())
        except Exception as exc:
            if shared := self.store.shared:
                record.storage = _NONE
                self.failed_writes += 1
            events.manifest_failed(
                f"could not add context {record.id} to the session manifest; "
                + ("its output is shown whole" if shared else "resume() will find it only by scanning the directory"),
                exc,
            )

    def spill(self, records: list[Record]) -> None:
        """Move in-memory outputs to the store; any that fail stay in memory."""
        failed: list[Record] = []
        for record in records:
            payload = record.payload
            if payload is None:
                continue
            try:
                while True:
                    generation = self._generation
                    self._put(record, payload)
                    with self.lock:
                        if generation == self._generation:  # not cleared meanwhile: the file is there
                            record.on_disk()
                            break
            except Exception as exc:
                failed.append(record)
                events.spill_failed(f"could not spill context {record.id} to {self._where!r}; it stays in memory", exc)
                continue
            self._append_manifest(record)
            self._emit(DEBUG, "spilled", id=record.id, size=record.size)
        if failed:
            with self.lock:
                for record in failed:
                    if record.id in self._records:
                        self._memory.append(record)
                        self.memory_bytes += record.size + len(record.args_json)

    deferred = staticmethod(deferred)  # (the block's stores upload in the background: see _uploads)

    def settle(self, timeout: float | None = None, ids: Iterable[str] | None = None) -> bool:
        """Wait for the outputs being uploaded to a shared store to land (or fail: they are then shown whole),
        or only those of the records ``ids``; False if ``timeout`` seconds ran out first. A model call does,
        for the handles it is about to show."""
        return self.uploads.settle(timeout, ids)

    def close(self, timeout: float) -> int | None:
        """Refuse new calls and wait up to ``timeout`` seconds for those being saved.

        Returns how many are still being saved then (0 when all landed), or None if
        the save path was closed already. Calls queued before are stored first.
        """
        if self.closed:
            return None
        self._closing = True  # queue() refuses from here on...
        try:
            with self.lock:  # ...and once the queue() calls under way are done, every queued call is in the queue
                self._idle.wait_for(lambda: not self._saving, timeout)
            self.store_queued(timeout)
            self.uploads.settle(timeout)
        except BaseException:  # (interrupted: the session stays open, and queue() takes calls again)
            self._closing = False
            raise
        with self.lock:
            if self.closed:
                return None
            self.closed = True
            # (another thread storing them took too long: it goes on with the old queue, whose saves are refused)
            left, self._later = len(self._later), LaterSaves()
        if left:
            internal_error(
                f"session {self.session_id} ended while another thread was still storing its queue; "
                f"{left} queued call(s) are not stored"
            )
        with self.lock:
            self._idle.wait_for(lambda: not self._saving, timeout)
            return len(self._saving)

    def flush(self) -> None:
        """Write every in-memory output to the store (a kept session ending)."""
        self.store_queued()
        self.uploads.settle()
        with self.lock:
            pending = list(self._memory)
            self._memory.clear()
            self.memory_bytes = 0
        self.spill(pending)

    def write_manifest(self) -> None:
        """List every output in the store, all at once (a session that is kept after all)."""
        self.store_queued()
        self.uploads.settle()
        with self.lock:
            stored = [r for r in self._records.values() if r.storage is _DISK]
        stored.sort(key=lambda r: (r.timestamp_ns, r.id))
        try:
            self.store.put(MANIFEST_NAME, [b"".join(r.manifest_line() for r in stored)])
        except Exception as exc:
            internal_error("could not write the session manifest; resume() will scan the directory instead", exc)
        self.listing = True

    def forget(self) -> int:
        """Drop every record held in memory (files already written stay); returns how many."""
        self.store_queued()
        self.uploads.settle()
        with self.lock:
            count = len(self._records)
            # A new dict, not the old one emptied: a selection that took the records before this
            # still finds every one it listed (records only ever go this way and in clear_store).
            self._records = {}
            self.names.clear()
            self._memory.clear()
            self.memory_bytes = 0
            self._cached.clear()
            self.cached_bytes = 0
            self._index.clear()
        return count

    def clear_store(self) -> int:
        """Delete the session's files and the records of what they hold; returns how many files.

        Only files this session wrote are deleted: those its records name, and others only if their
        first bytes say so (:func:`~toolctx._naming.is_own_file`). The lock is held throughout: a call
        being written meanwhile sees the clear when it registers, and writes its file again after it.
        """
        self.store_queued()
        self.uploads.settle()
        with self.lock:
            gone = [k for k, r in self._records.items() if r.storage is not _MEMORY]
            written = {self._records[k].filename for k in gone}
            self._records = {k: r for k, r in self._records.items() if r.storage is _MEMORY}  # (see forget)
            self._written.clear()
            self._cached.clear()
            self.cached_bytes = 0
            owned = [name for name in self.store.list() if name in written or self._owns(name)]
            removed = sum(self.store.delete(name) for name in owned)
            self._generation += 1
            self._index.remove(gone)
        return removed

    def _owns(self, name: str) -> bool:
        try:
            head = self.store.head(name, HEAD_BYTES)
        except OSError:  # gone meanwhile, or not a regular file: not ours to delete
            return False
        return is_own_file(name, head, self.session_id)

    def after_fork(self) -> None:
        """Make a forked child's copy usable: it has only the thread that forked it.

        No call is being saved there and no one waits (``fork_safe_lock`` released the locks). The search
        index is rebuilt from the records: another thread may have left it half updated, or pinned.
        """
        self._saving = []
        self._later.after_fork()  # (the parent stores what it queued)
        self.uploads.after_fork()  # (and uploads what it was uploading)
        self._idle = threading.Condition(self.lock)
        self._index = index = SearchIndex()
        for record in list(self._records.values()):
            index.add_document(record)
        self.store.after_fork()
