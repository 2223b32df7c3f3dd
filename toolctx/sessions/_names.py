"""How a session names its calls: each call's id, and its calls by conversation and framework call id."""

from __future__ import annotations

import itertools
from collections.abc import Container, Iterable

from toolctx._naming import legacy_pointer_id, new_pointer_id
from toolctx._platform import fork_safe_lock
from toolctx.sessions._records import Record

__all__ = ["CallNames"]

_Key = tuple[int | str | None, str]  # (task, framework call id)


class CallNames:
    """A session's names for its calls.

    Each call gets a counter (the order calls were saved in, which orders a
    session's files) and an id drawn at random (``numbered``: the counter after a
    fixed hex part instead, so a test can write ids down). A framework's call id
    is not unique: a conversation's task is part of the key, and a model server
    may number its calls per response, so every call filed under a key is kept.
    """

    def __init__(self) -> None:
        self._counter = itertools.count()
        self.numbered: str | None = None
        self._by_call: dict[_Key, list[str]] = {}  # key -> record ids, oldest first
        self._restored: list[Record] = []  # records taken over from the store, filed when first looked up
        self._filing = fork_safe_lock()

    def new(self, taken: Container[str]) -> tuple[str, int]:
        """A new call's id and counter; the id is none of ``taken``."""
        counter = next(self._counter)  # (atomic under the GIL)
        if self.numbered is not None:
            return legacy_pointer_id(self.numbered, counter), counter
        while True:
            pointer = new_pointer_id()
            if pointer not in taken:  # (about 1 in 10^14 a pair: checked all the same)
                return pointer, counter

    def file(self, record: Record) -> None:
        """File ``record`` under its task and framework call id, the newest of any filed so."""
        task_id, call_id = record.filed_under()
        self._by_call.setdefault((task_id, call_id or ""), []).append(record.id)  # (atomic: no lock)

    def ids(self, task_id: int | str | None, call_id: str) -> Iterable[str]:
        """The ids of the calls filed under this task and framework call id, newest first."""
        if self._restored:
            self._file_restored()
        return reversed(self._by_call.get((task_id, call_id), ()))

    def restore(self, records: list[Record]) -> None:
        """Take over records rebuilt from the store, filed when a call is first looked up by its framework id
        (a turn that never does so does not pay for it), and count new calls after them."""
        self._restored = records
        self._counter = itertools.count(max((r.counter for r in records), default=-1) + 1)

    def _file_restored(self) -> None:
        """File the records taken over from the store before any filed since (they are older)."""
        with self._filing:
            restored, self._restored = self._restored, []
            older: dict[_Key, list[str]] = {}
            for record in sorted(restored, key=lambda r: (r.timestamp_ns, r.counter)):
                task_id, call_id = record.filed_under()
                if call_id is not None:
                    older.setdefault((task_id, call_id), []).append(record.id)
            for key, ids in older.items():  # (in place: a call being filed meanwhile is kept, after them)
                self._by_call.setdefault(key, [])[:0] = ids

    def clear(self) -> None:
        """Forget every filed call (ids and counters go on)."""
        with self._filing:
            self._restored = []
            self._by_call.clear()
