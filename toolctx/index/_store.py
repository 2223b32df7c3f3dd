"""A blob store whose manifest lives in a session index: payloads in one place, the listing in a database.

Every worker of a fleet writes the session's payloads to the shared object store
and lists them in the index, one row per call, in one short transaction: no
read-modify-write of a manifest object, no retries when workers list at once.
Everything else (put, get, ranged reads, deletion) goes to the store beneath.

While this worker holds the session's lease (:meth:`IndexedStore.held`), no other
worker changes the session: its compaction decisions and notes, once read or
written here, are answered from memory, so a model call in the middle of a turn
asks the index nothing (the first one of a turn reads them).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import orjson

from toolctx._naming import MANIFEST_NAME
from toolctx.index._index import SessionIndex
from toolctx.storage import BlobStore

__all__ = ["IndexedStore"]


class IndexedStore(BlobStore):
    """``store``'s blobs, with the manifest of session ``session_id`` kept in ``index`` (see the module)."""

    shared = True  # (any worker reaching the store and the index serves the session)

    def __init__(self, store: BlobStore, index: SessionIndex, session_id: str) -> None:
        self.store = store
        self.index = index
        self.session_id = session_id
        self.holding = False
        self._states: dict[str, bytes | None] = {}  # read or written while held: the session's state as it is
        self._words: dict[str, bool] = {}  # the same for notes
        self._read = False  # (both read since the lease was taken)

    def display_location(self) -> str:
        return self.store.display_location()

    def __repr__(self) -> str:
        return f"IndexedStore({self.store!r}, {self.index!r})"

    def put(self, name: str, chunks: Sequence[bytes]) -> None:
        if name != MANIFEST_NAME:
            self.store.put(name, chunks)
            return
        lines = b"".join(chunks).splitlines(keepends=True)
        self.index.replace(self.session_id, [(line, *_identity(line)) for line in lines if line.strip()])

    def get(self, name: str) -> bytes:
        if name == MANIFEST_NAME:
            return b"".join(self.index.entries(self.session_id))
        return self.store.get(name)

    def create(self, name: str, chunks: Sequence[bytes]) -> None:
        self.store.create(name, chunks)

    def read_range(self, name: str, start: int, end: int) -> bytes:
        return self.store.read_range(name, start, end)

    def head(self, name: str, size: int) -> bytes:
        if name == MANIFEST_NAME:
            return self.get(name)[:size]
        return self.store.head(name, size)

    def delete(self, name: str) -> bool:
        if name == MANIFEST_NAME:
            had = bool(self.index.entries(self.session_id))
            self.index.replace(self.session_id, [])
            return had
        return self.store.delete(name)

    def list(self) -> list[str]:
        return [name for name in self.store.list() if name != MANIFEST_NAME]

    def append(self, name: str, data: bytes) -> None:
        if name != MANIFEST_NAME:
            self.store.append(name, data)
            return
        record_id, task, call_id = _identity(data)
        self.index.add(self.session_id, data, record_id=record_id, task=task, call_id=call_id)

    def find_listed(self, task: str | None, call_id: str) -> builtins.list[bytes] | None:
        return self.index.identified(self.session_id, task, call_id)

    def held(self, holding: bool) -> None:
        self.holding = holding
        self.turn += holding
        self._states, self._words = {}, {}  # (from a turn's start on, read once again)
        self._read = False

    def _held_state(self) -> None:
        """While held, read the session's notes and decisions once, in one query (a turn's first model call)."""
        if not self.holding or self._read:
            return
        found = self.index.state(self.session_id)
        if self.holding:  # (not if the lease lapsed meanwhile: then read each time again)
            words, states = found or ((), {})
            self._words.update(dict.fromkeys(words, True))
            for name, text in states.items():
                self._states.setdefault(name, text.encode("utf-8", "surrogatepass"))
            self._read = True

    def get_state(self, name: str) -> bytes | None:
        self._held_state()
        if name in self._states or self._read:
            return self._states.get(name)
        found = self.index.decided(self.session_id, name)
        return None if found is None else found.encode("utf-8", "surrogatepass")

    def put_state(self, name: str, data: bytes) -> None:
        self.index.decide(self.session_id, name, data.decode("utf-8", "surrogatepass"))
        if self.holding:  # (a read after this one finds it; one before finds what the writer holds)
            self._states[name] = data

    def path(self, name: str) -> str | None:
        return self.store.path(name)

    def note(self, word: str) -> None:
        self.index.note(self.session_id, word)
        if self.holding:
            self._words[word] = True

    def noted(self, word: str) -> bool | None:
        self._held_state()
        if self._read:
            return self._words.get(word, False)
        return self.index.noted(self.session_id, word)

    def after_fork(self) -> None:
        self.held(False)  # (a forked child holds no lease)
        self.store.after_fork()

    def close(self, *, remove: bool = False) -> None:
        try:
            self.store.close(remove=remove)
        finally:
            if remove:  # (objects left behind are then no session's, and the store's sweep removes them)
                self.index.forget(self.session_id)


def _identity(line: bytes) -> tuple[str, str | None, str | None]:
    """The record id, task and framework call id a manifest line names."""
    entry = orjson.loads(line)
    task, call_id = entry.get("task_id"), entry.get("call_id")
    return str(entry["id"]), None if task is None else str(task), None if call_id is None else str(call_id)
