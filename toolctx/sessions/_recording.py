"""Recording calls in a session: now (``save_context``, ``record_call``) or later, with the queue.

The decorator hands its calls to the session's :class:`~toolctx.sessions.SavePath`
directly; everything else that records a call comes through these doors, which
check the call once and encode its arguments as stored.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from toolctx._defaults import byte_count
from toolctx._naming import handle, sanitize_tool_name
from toolctx._serialize import clean_text, encode
from toolctx.errors import ConfigError
from toolctx.models import ContextPointer, ErrorInfo, StorageKind
from toolctx.sessions._clock import clock
from toolctx.sessions._core import SessionCore
from toolctx.sessions._records import Call, Record

__all__ = ["Recording", "SavedCall", "checked_task_id"]


@dataclass(frozen=True, slots=True)
class SavedCall:
    """A call :meth:`~toolctx.ContextSession.record_call` stored: its id, and what showing its output needs.

    Lighter than the :class:`~toolctx.ContextPointer` that
    :meth:`~toolctx.ContextSession.save_context` returns, which takes longer to build than
    storing a small call; ``session.get_pointer(saved.id)`` gives that pointer.
    """

    id: str
    stored: bool  # False: the output could not be written, only the call was recorded
    is_error: bool
    tool: str = ""  # the tool's name, as the adapter gave it

    @property
    def handle(self) -> str:
        """The handle the model is shown: ``ctx:<id>``."""
        return handle(self.id)


class Recording(SessionCore):
    """The doors of :class:`~toolctx.ContextSession` that record calls (a base class of it)."""

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
        record = self._record(
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

    def record_call(
        self,
        tool_name: str,
        args: Mapping[str, Any],
        result: Any,
        task_id: int | str | None = None,
        query_id: str | None = None,
        *,
        error: BaseException | ErrorInfo | None = None,
        call_id: str | None = None,
        argument_notes: Sequence[str] = (),
    ) -> SavedCall:
        """:meth:`save_context` without building the pointer: what a framework adapter's tool hook needs.

        Storing a small call costs less than building its :class:`~toolctx.ContextPointer`;
        the receipt has its id, whether its output was stored, and whether it was
        an error (``get_pointer(saved.id)`` gives the pointer). ``argument_notes``: what
        the stored arguments do not say (stored as ``"arguments: <note>"`` in the
        context's notes): "content passed by reference: ctx:<id>", say.
        """
        record = self._record(
            tool_name, args, result, task_id, query_id, error=error, call_id=call_id, argument_notes=argument_notes
        )
        return SavedCall(record.id, record.storage is not StorageKind.NONE, record.is_error, tool_name)

    def _record(
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
        argument_notes: Sequence[str] = (),
        checked: bool = False,
    ) -> Record:
        """Store one call; its record (``args`` may come encoded already: a queued call's; ``checked``: a queued
        call's names and ids were checked, and its task id made as stored, when it was queued)."""
        if not checked:
            task_id = _checked_call(tool_name, args, task_id, query_id, call_id)
        if description is not None and not isinstance(description, str):
            raise ConfigError(f"description must be a str, got {type(description).__name__}")
        args_json, args_notes, order = args if isinstance(args, _Encoded) else _Encoded.of(args)  # (queued: done)
        if argument_notes:  # (what the stored arguments do not say: "content passed by reference: ctx:<id>")
            args_notes = (*args_notes, *map(clean_text, argument_notes))
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

    def kept_call(self, tool_name: str, args: Mapping[str, Any], text: str) -> tuple[Any, str]:
        """A call with ``args`` and the string output ``text`` as storing it would keep them: the arguments (as
        read back) and the output, redacted the way this session redacts. Compaction tells a conversation's
        call from another stored under the same framework id by it."""
        args_json, args_notes, order = _Encoded.of(args)
        screen = self._saver.screen
        if screen is None:
            return orjson.loads(args_json), text
        call = Call(*_tool_names(tool_name), args_json, args_notes, order=order)
        kept_args, data, _ = screen.screen(call, encode(text)[0])
        kept = orjson.loads(data)
        return orjson.loads(kept_args), kept if isinstance(kept, str) else text

    def record_call_later(
        self,
        tool_name: str,
        args: Mapping[str, Any],
        result: str,
        task_id: int | str | None = None,
        query_id: str | None = None,
        *,
        call_id: str | None = None,
    ) -> None:
        """:meth:`record_call`, done with the calls queued before it as soon as anything reads the session.

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
            self._record(tool_name, args, result, task_id, query_id, call_id=call_id)  # (kept there now, as before)
            return
        kept: Mapping[str, Any] | _Encoded = args
        if type(args) is dict:
            encoded = _Encoded.of(args)
            kept = encoded._replace(json=memoryview(encoded.json).tobytes())  # (held a while: not orjson's buffer)
        save = functools.partial(
            self._record,
            tool_name,
            kept,
            result,
            task_id,
            query_id,
            call_id=call_id,
            timestamp_ns=clock.time_ns(),
            checked=True,
        )
        saver.queue(save)


@functools.lru_cache(maxsize=256)
def _tool_names(tool_name: str) -> tuple[str, str]:
    """A tool's name as stored and in its file-name-safe form (the same few names come on every call)."""
    return clean_text(tool_name), sanitize_tool_name(tool_name)


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
    return None if task_id is None else checked_task_id(task_id)


def checked_task_id(value: object) -> int | str:
    """A task id as stored: an int, or a str made valid UTF-8."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(f"task_id must be an int or a str, got {type(value).__name__}: {value!r:.80}")
    return clean_text(value) if isinstance(value, str) else value
