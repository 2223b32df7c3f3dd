"""Reading a session back: pointers, calls by their conversation and framework id, selection and loading."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import NamedTuple

import orjson

from toolctx._internal import DEBUG
from toolctx._naming import strip_handle
from toolctx.errors import ConfigError
from toolctx.models import ContextPointer, StorageKind, StoredContext
from toolctx.selection import MIN_SCORE_RATIO, Candidates, SelectionState, as_strategy, pointer_tokens, select, utc_now
from toolctx.sessions._core import SessionCore
from toolctx.sessions._loading import ContextRef, Loader
from toolctx.sessions._records import CallParts, Record

__all__ = ["Lookups", "ResultPage"]


class ResultPage(NamedTuple):
    """A page of a stored output (:meth:`Lookups.result_page`): its call's id and task, its length in
    characters, and the page's characters."""

    id: str
    task_id: int | str | None
    chars: int
    text: str


class Lookups(SessionCore):
    """The doors of :class:`~toolctx.ContextSession` that read calls back (a base class of it)."""

    _loader: Loader

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

    def find_call(self, call_id: str, *, task_id: int | str | None = None) -> ContextPointer | None:
        """The newest call stored with this framework call id under ``task_id`` (a conversation's), or None.

        The task is part of a call's identity: two conversations (threads, groups,
        runs) that number their calls alike each find their own. ``task_id=None``
        finds calls as ``save_context`` stores them: under the enclosing
        :meth:`task` block's tag, else under none. A framework may
        give one id to several calls of a conversation: :meth:`call_parts` lists them all.
        """
        records = self._loader.named(_checked_call_id(call_id), task_id)
        return self._pointer(records[0]) if records else None

    def load_call(self, call_id: str, *, task_id: int | str | None = None) -> StoredContext | None:
        """The newest call stored with this framework call id under ``task_id``, loaded in full; None if none was.

        ``load_contexts([find_call(call_id, task_id=...)])`` without making the pointer.
        A call whose output could not be written, or whose file cannot be read, is
        None too: tell the two apart with :meth:`find_call`.
        """
        records = self._loader.named(_checked_call_id(call_id), task_id)
        if not records or records[0].storage is StorageKind.NONE:
            return None
        return next(iter(self.load_contexts([records[0].id])), None)

    def call_parts(self, call_id: str, *, task_id: int | str | None = None) -> list[CallParts]:
        """What :meth:`load_call` gives of every call stored with this framework call id under ``task_id``,
        newest first, read straight from memory while an output is there.

        Compaction reads every call it stands in for back, and tells calls that share
        an id apart by their output: this is its path, without the context's metadata
        (description, timestamp) it does not use. Calls whose output was not stored
        are left out.
        """
        found = (self._parts(record) for record in self._loader.named(_checked_call_id(call_id), task_id))
        return [parts for parts in found if parts is not None]

    def catch_up(self, call_id: str | None = None, *, task_id: int | str | None = None) -> int:
        """Take in the calls other workers stored since in a shared store (see ``store.shared``): all of them,
        or those with this framework call id under ``task_id``; how many were new. A handle or call id this
        process does not know is looked up this way by itself."""
        return self._loader.catch_up(call_id, task_id)

    def result_page(self, ref: str, offset: int, limit: int) -> ResultPage | None:
        """Characters ``offset`` to ``offset + limit`` of the output ``ref`` names, read with one ranged request:
        for an output kept only in a shared store whose listing says where its characters lie (a long string).
        None for any other (read it whole with :meth:`load_contexts`), or if the read failed."""
        record = self._loader.resolve(ref) if isinstance(ref, str) else None
        spans = None if record is None or record.payload is not None else record.spans
        if spans is None or record is None or offset >= spans[1]:
            return None
        start, chars, step, offsets = spans
        first, last = offset // step, min(len(offsets) - 1, -(-(offset + limit) // step))
        try:
            data = self._saver.store.read_range(record.filename, start + offsets[first], start + offsets[last])
            text = orjson.loads(b'"' + data + b'"')
        except Exception as exc:
            self._event(DEBUG, "ranged_read_failed", id=record.id, error=f"{type(exc).__name__}: {exc}")
            return None
        at = offset - first * step
        return ResultPage(record.id, record.call.task_id, chars, text[at : at + limit])

    def parts_of(self, ref: str) -> CallParts | None:
        """:meth:`call_parts` of the call with this pointer id (or handle): None if this session has no such
        call, or its output was not stored."""
        if not isinstance(ref, str):
            return None
        pointer_id = strip_handle(ref)
        record = self._saver.records.get(pointer_id) or self._loader.caught_up(pointer_id)
        return None if record is None else self._parts(record)

    def unstored(self, ref: str) -> CallParts | None:
        """The parts of a call whose handle was handed out but whose output could not be stored (its upload to
        a shared store failed): shown whole instead of by its handle. None for any other call."""
        record = self._saver.records.get(strip_handle(ref)) if isinstance(ref, str) else None
        if record is None or record.storage is not StorageKind.NONE or record.payload is None:
            return None
        return self._parts(record, unstored=True)

    def _parts(self, record: Record, *, unstored: bool = False) -> CallParts | None:
        """The parts of a record of this session (None if its output is not stored, unless ``unstored``)."""
        if record.storage is StorageKind.NONE and not unstored:
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
            # Clearing replaces the records dict instead of emptying it, so these are the records
            # as they stood now, whatever a clear() in another thread does while the selection runs.
            records, ids = self._saver.records_as_now()

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
        another session is skipped with a logged warning; one this session stored that cannot be read
        now (a store out of reach, a damaged file) with a :class:`~toolctx.ToolctxWarning` too.
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


def _checked_call_id(call_id: object) -> str:
    if not isinstance(call_id, str):
        raise ConfigError(f"call_id must be a str, got {type(call_id).__name__}: {call_id!r:.80}")
    return call_id
