"""Records read back from the manifest, built in full only when something uses them.

Reopening a conversation lists every call it stored, and a turn then reads a
handle or two: building each record in full (a validated pointer model, the
arguments re-encoded, the preview copied) costs that turn the whole history. So
:func:`listed_record` checks a manifest line with plain type checks, keeps
what reopening needs (the id, the time, the counter, the framework call id and
task) and leaves the rest in the line, which the record parses again the first
time anything reads a field it does not have yet. The search index, which reads
every call's texts when it is first searched, reads them from the lines without
building the records.

The check accepts only lines the full parse (:func:`parse_manifest_line`) would
take with the same values: every field of the type the pointer model wants, the
timestamp in the form toolctx writes. Any other line gets that full parse at once,
so a damaged or foreign line is refused at reopening, as before, and a record
that reopening kept can always be built.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from toolctx._naming import POINTER_ID, parse_context_filename
from toolctx.models import ContextPointer, StorageKind
from toolctx.sessions._records import Record, shorten_args
from toolctx.sessions._spans import checked_spans

__all__ = ["ListedRecord", "listed_record"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NS = timedelta(microseconds=1)

# The fields built from the line on first use (every other slot is set at once).
_LAZY = frozenset(
    {
        *("_filename", "_preview", "_tokens", "args_hash", "is_error", "plain", "size", "spans"),
        *("args_json", "args_notes", "description", "order", "query_id", "safe_name", "threshold", "tool_name"),
    }
)  # (the fields of its call too: a record is its call; the task and framework call id are set at once)


# Every field toolctx writes on a manifest line (``spans`` aside), each checked in listed_record. A pointer
# model with a field listed_record does not know (a newer toolctx) leaves every line to the full parse.
_KEYS = frozenset(
    {
        *("op", "file", "id", "tool_name", "tool_description", "args", "args_hash", "timestamp"),
        *("task_id", "query_id", "call_id", "size", "is_error", "tokens", "preview"),
    }
)
_WRITTEN = frozenset(ContextPointer.model_fields) - {"session_id", "storage", "filename", "filepath"} | {"op", "file"}
_CHECKED = len(_KEYS) if _WRITTEN == _KEYS else -1


# The last line read for the search index, and whose (it reads a call's texts and size one after another).
_peeked: tuple[object, dict[str, Any]] = (None, {})


def _stamp(text: str) -> int | None:
    """The nanoseconds since the epoch of a timestamp as toolctx writes it (ISO 8601, UTC, whole or to the
    microsecond); None for any other form (left to the full parse)."""
    if len(text) not in (25, 32) or text[10] != "T" or not text.endswith("+00:00"):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (moment - _EPOCH) // _NS * 1000


def listed_record(source: bytes, start: int, end: int) -> tuple[ListedRecord, str] | None:
    """The record of the manifest line ``source[start:end]``, its fields left in the line, and the file it names;
    None when the line is not in the form toolctx writes (then :func:`parse_manifest_line` decides)."""
    try:
        entry = orjson.loads(memoryview(source)[start:end])
    except orjson.JSONDecodeError:
        return None
    if type(entry) is not dict or len(entry) - ("spans" in entry) != _CHECKED:
        return None
    try:  # (every key of _KEYS, of the type the pointer model wants: it would take the line as it is)
        name, pointer_id, task_id, query_id, call_id = (
            entry["file"],
            entry["id"],
            entry["task_id"],
            entry["query_id"],
            entry["call_id"],
        )
        size, tokens, stamp = entry["size"], entry["tokens"], entry["timestamp"]
        if not (
            entry["op"] == "put"
            and type(name) is str
            and type(pointer_id) is str
            and type(entry["tool_name"]) is str
            and type(entry["tool_description"]) is str
            and type(entry["args"]) is dict
            and type(entry["args_hash"]) is str
            and type(stamp) is str
            and (task_id is None or type(task_id) is int or type(task_id) is str)
            and (query_id is None or type(query_id) is str)
            and (call_id is None or type(call_id) is str)
            and type(size) is int
            and size >= 0
            and type(entry["is_error"]) is bool
            and type(tokens) is int
            and tokens >= 0
            and type(entry["preview"]) is str
        ):
            return None
    except KeyError:
        return None
    timestamp_ns = _stamp(stamp)
    parsed = parse_context_filename(name)
    if timestamp_ns is None or parsed is None or POINTER_ID.fullmatch(pointer_id) is None:
        return None
    return ListedRecord(pointer_id, timestamp_ns, parsed.counter, task_id, call_id, source, start, end), name


class ListedRecord(Record):
    """A record read from a manifest line that :func:`listed_record` checked; built in full on first use.

    Its id, time, counter and framework call id are set at once; any other field
    is read from the line the first time something asks for it (a field never
    asked for is never built). Until then it holds the manifest it was read from.
    """

    __slots__ = ("_line", "_source")

    def __init__(
        self,
        id: str,
        timestamp_ns: int,
        counter: int,
        task_id: int | str | None,
        call_id: str | None,
        source: bytes,
        start: int,
        end: int,
    ) -> None:
        # (Record.__init__ is not called: it would set the fields this record leaves in its line.)
        self.id = id
        self.timestamp_ns = timestamp_ns
        self.counter = counter
        self.task_id, self.call_id = task_id, call_id
        self.storage = StorageKind.DISK
        self.payload = None
        self._source: bytes | None = source
        self._line = start << 32 | (end - start)  # (one number, not two: a line is under 4 GB)

    def __getattr__(self, name: str) -> Any:
        # Called only for a slot not set: the fields left in the line (built here, or by another thread now).
        if name not in _LAZY:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._build()
        return object.__getattribute__(self, name)

    @property
    def tokens(self) -> int:
        """As :attr:`Record.tokens`, read from the line while the record is not built."""
        entry = self._peek(last=True)  # (the index reads it last)
        return super().tokens if entry is None else int(entry["tokens"])

    def search_text(self) -> str:
        """As :meth:`Record.search_text`, read from the line while the record is not built (the index reads
        every call's texts once: that builds none of them)."""
        entry = self._peek()
        if entry is None:
            return super().search_text()
        args = shorten_args(orjson.dumps(entry["args"])).decode()
        return f"{entry['tool_name']} {entry['tool_description']} {args}"

    def index_text(self) -> str:
        """As :meth:`Record.index_text` (the preview), read from the line while the record is not built."""
        entry = self._peek()
        return super().index_text() if entry is None else str(entry["preview"])

    def _peek(self, *, last: bool = False) -> dict[str, Any] | None:
        """The line's fields while the record is not built (None once it is), parsed once for the index's reads
        of one call one after another (``last``: its last read, after which nothing is kept)."""
        global _peeked
        source = self._source
        if source is None:
            return None
        record, entry = _peeked
        if record is not self:
            entry = orjson.loads(self._line_of(source))
        _peeked = (None, {}) if last else (self, entry)  # (the record is not kept: it holds the manifest)
        return entry

    def manifest_line(self) -> bytes:
        """The line this record was read from, as it was, while it is not built (else built again)."""
        source = self._source
        if source is None:
            return super().manifest_line()
        return b"".join((self._line_of(source), b"\n"))

    def _line_of(self, source: bytes) -> memoryview:
        start = self._line >> 32
        return memoryview(source)[start : start + (self._line & 0xFFFFFFFF)]

    def _build(self) -> None:
        """Read every field left in the line (one the caller set meanwhile is kept)."""
        source = self._source
        if source is None:
            return
        entry = orjson.loads(self._line_of(source))
        filename: str = entry["file"]
        parsed = parse_context_filename(filename)
        if parsed is None:  # (listed_record checked it: not reached)
            raise ValueError(f"{filename!r} is not a context file name")
        fields = {
            "tool_name": entry["tool_name"],
            "safe_name": parsed.tool,
            "args_json": memoryview(orjson.dumps(entry["args"])).tobytes(),  # (orjson over-allocates: a copy)
            "args_notes": (),
            "order": (),
            "description": entry["tool_description"],
            "threshold": None,
            "query_id": entry["query_id"],
            "_filename": filename,
            "_preview": entry["preview"],
            "_tokens": entry["tokens"],
            "args_hash": entry["args_hash"],
            "is_error": entry["is_error"],
            "plain": False,
            "size": entry["size"],
            "spans": checked_spans(entry.get("spans")),
        }
        for name, value in fields.items():
            try:
                object.__getattribute__(self, name)
            except AttributeError:
                object.__setattr__(self, name, value)
        self._source = None  # (the manifest is let go once no record needs it)
