"""What a save path holds: its records, by id and by framework call id, and the search index over them.

:class:`Holding` is the part of :class:`~toolctx.sessions._saving.SavePath` that
reads and replaces the records (the calls queued first stored); the save path
itself stores calls.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from toolctx.redaction import Redactor
from toolctx.selection import SearchIndex
from toolctx.sessions._names import CallNames
from toolctx.sessions._queue import LaterSaves
from toolctx.sessions._records import Record
from toolctx.sessions._screening import CallScreen
from toolctx.sessions._tags import current_tags

__all__ = ["Holding"]


class Holding:
    """The records of one session's save path (see the module)."""

    lock: threading.Lock
    names: CallNames
    _records: dict[str, Record]
    _index: SearchIndex
    _later: LaterSaves
    _screen: CallScreen | None

    if TYPE_CHECKING:

        def store_queued(self, timeout: float | None = None) -> None: ...

    @property
    def redactor(self) -> Redactor | None:
        """What removes secrets before a call is kept (None: nothing); one given as a function (the default
        redactor) is built when first used, not when a conversation is reopened to be read."""
        return None if self._screen is None else self._screen.redactor

    @property
    def records(self) -> dict[str, Record]:
        """Every stored call by id (the calls queued first stored)."""
        if self._later:
            self.store_queued()
        return self._records

    def taken(self) -> tuple[int, int]:
        """How many calls are stored and how many queued, storing nothing: it changes as calls are taken."""
        return len(self._records), len(self._later)

    def named(self, call_id: str, task_id: int | str | None) -> list[Record]:
        """The records stored with this framework call id under this task (None: the enclosing ``task()``
        block's, as a call is stored), newest first (queued calls stored first). A framework may give the same
        id to several calls (one numbering its calls per response)."""
        if self._later:
            self.store_queued()
        if task_id is None:  # (as a call is stored: under the enclosing task() block's tag)
            task_id = current_tags.get().task_id
        records = self._records
        return [record for pointer in self.names.ids(task_id, call_id) if (record := records.get(pointer)) is not None]

    @property
    def index(self) -> SearchIndex:
        """The search index of the stored calls (the calls queued first stored)."""
        if self._later:
            self.store_queued()
        return self._index

    def records_as_now(self) -> tuple[dict[str, Record], list[str]]:
        """The records as they stand now, and their ids: a later clear replaces the dict, never empties it."""
        self.store_queued()  # (not under the lock below: storing takes it)
        with self.lock:
            records = self._records
            return records, list(records)

    def restore(self, records: list[Record]) -> None:
        """Take over records rebuilt from the store (resume), numbering new calls after them."""
        with self.lock:
            self._records = {r.id: r for r in records}
            self.names.restore(records)
        for record in records:  # (each gives its texts when the index is first searched: none is built now)
            self._index.add_document(record)

    def adopt(self, records: list[Record]) -> int:
        """Take in the records another process listed in a shared store since this one read it; how many."""
        with self.lock:
            fresh = [r for r in records if r.id not in self._records]
            self._records.update((r.id, r) for r in fresh)
        for record in fresh:
            if record.filed_under()[1] is not None:
                self.names.file(record)
            self._index.add_document(record)
        return len(fresh)

    def snapshot(self) -> list[Record]:
        """Every record, oldest first (a queued call keeps the time it was queued at)."""
        self.store_queued()
        with self.lock:
            records = list(self._records.values())
        records.sort(key=lambda r: (r.timestamp_ns, r.counter))
        return records
