"""What a session remembers about each stored call, and the documents it writes.

A :class:`Record` is deliberately cheap to create: saving a small result builds
one record holding exact-size copies of the argument and result JSON, and
nothing else. The file name, the description (unless the tool sets its own) and
the full JSON document are only built when something needs them: a spill to
disk, a load, or a pointer handed to the caller.

The stored document (one per file, and what ``load_contexts`` parses) is::

    {"format": "toolctx/1", "id", "session_id", "tool_name", "tool_description",
     "args", "args_hash", "timestamp", "task_id", "query_id", "error", "notes", "result"}

with ``result`` last, so a large result is written straight after the header
without being copied into it.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson

from toolctx.describe import default_description
from toolctx.models import FORMAT, ContextPointer, ErrorInfo, StorageKind, StoredContext
from toolctx.naming import context_filename, parse_context_filename
from toolctx.redaction import Redactor
from toolctx.serialize import clean_text
from toolctx.tokens import estimate_tokens

__all__ = [
    "ARGS_INLINE_LIMIT",
    "INDEX_PREVIEW_CHARS",
    "PREVIEW_CHARS",
    "Payload",
    "Record",
    "error_info",
    "parse_document",
    "preview_of",
    "record_from_context",
    "record_from_manifest",
    "shorten_args",
]

ARGS_INLINE_LIMIT = 1024
"""Pointers keep arguments whole up to this many JSON bytes and shorten larger ones."""
PREVIEW_CHARS = 200
"""Characters of a result kept in its pointer's preview."""
INDEX_PREVIEW_CHARS = 1000
"""Characters of a result the search index reads (so ranking never reads stored files)."""


def preview_of(text: str | None, data: bytes, limit: int = PREVIEW_CHARS) -> str:
    """The start of a result as text: ``text`` when the result is a plain string, else its JSON."""
    if text is not None:
        return text[:limit]
    return data[: limit * 4].decode("utf-8", "ignore")[:limit]


Payload = tuple[bytes, bytes, ErrorInfo | None, tuple[str, ...]]
"""What an in-memory record holds: full args JSON, result JSON, error, fallback notes."""


class Record:
    """One stored call. ``payload`` is set while the output lives in memory."""

    __slots__ = (
        "_filename",
        "_preview",
        "args_hash",
        "args_json",
        "call_id",
        "counter",
        "description",
        "id",
        "is_error",
        "order",
        "payload",
        "plain",
        "query_id",
        "rand",
        "safe_name",
        "size",
        "storage",
        "task_id",
        "timestamp_ns",
        "tokens",
        "tool_name",
    )

    def __init__(
        self,
        id: str,
        counter: int,
        rand: str,
        tool_name: str,
        safe_name: str,
        description: str | None,
        args_json: bytes,
        args_hash: str,
        timestamp_ns: int,
        task_id: int | str | None,
        query_id: str | None,
        size: int,
        storage: StorageKind,
        is_error: bool,
        payload: Payload | None,
        order: tuple[str, ...] = (),
        tokens: int = 0,
        preview: str | None = "",
        plain: bool = False,
        call_id: str | None = None,
    ) -> None:
        self.id = id
        self.counter = counter
        self.rand = rand
        self.tool_name = tool_name
        self.safe_name = safe_name
        self.description = description
        self.args_json = args_json
        self.args_hash = args_hash
        self.timestamp_ns = timestamp_ns
        self.task_id = task_id
        self.query_id = query_id
        self.size = size
        self.storage = storage
        self.is_error = is_error
        self.payload = payload
        self.order = order
        self.tokens = tokens
        self._preview = preview  # None: derived from the in-memory payload when asked for
        self.plain = plain  # the result is a plain string, previewed as text rather than JSON
        self.call_id = call_id  # the framework's id for this tool call, when an adapter stored it
        self._filename: str | None = None

    @property
    def filename(self) -> str:
        # Built from the record's parts each time (not cached: ~100 bytes per call saved);
        # set explicitly for calls sharing an earlier file or recovered from disk.
        if self._filename is not None:
            return self._filename
        return context_filename(self.safe_name, self.args_hash, self.timestamp_ns // 1_000_000, self.counter, self.rand)

    def args(self) -> dict[str, Any]:
        """The arguments (shortened if large) in the tool's parameter order."""
        args: dict[str, Any] = orjson.loads(shorten_args(self.args_json))
        if not self.order:
            return args
        ordered = {name: args.pop(name) for name in self.order if name in args}
        ordered.update(args)
        return ordered

    def describe(self) -> str:
        """The call's description, built from its arguments on first use unless the tool set one."""
        if self.description is None:
            self.description = default_description(self.tool_name, self.args())
        return self.description

    @property
    def timestamp(self) -> datetime:
        return datetime.fromtimestamp(self.timestamp_ns / 1e9, UTC)

    def document(self, session_id: str, payload: Payload) -> tuple[bytes, ...]:
        """The full stored document, as chunks to write one after another."""
        args, result, error, notes = payload
        header = orjson.dumps(
            {
                "format": FORMAT,
                "id": self.id,
                "session_id": session_id,
                "tool_name": self.tool_name,
                "tool_description": self.describe(),
                "args": orjson.Fragment(args),
                "args_hash": self.args_hash,
                "timestamp": self.timestamp,
                "task_id": self.task_id,
                "query_id": self.query_id,
                "error": None if error is None else error.model_dump(),
                "notes": list(notes),
                "call_id": self.call_id,
            }
        )
        return header[:-1], b',"result":', result, b"}"

    def context(self, session_id: str, payload: Payload) -> StoredContext:
        """The StoredContext of an in-memory record, without a JSON round trip of the header."""
        args, result, error, notes = payload
        return StoredContext(
            id=self.id,
            session_id=session_id,
            tool_name=self.tool_name,
            tool_description=self.describe(),
            args=orjson.loads(args),
            args_hash=self.args_hash,
            timestamp=self.timestamp,
            task_id=self.task_id,
            query_id=self.query_id,
            result=orjson.loads(result),
            error=error,
            notes=list(notes),
            call_id=self.call_id,
        )

    def pointer(self, session_id: str, path: str | None) -> ContextPointer:
        """A fresh pointer; ``path`` is the file's path when the store has one."""
        on_disk = self.storage is StorageKind.DISK
        args = self.args()
        return ContextPointer(
            id=self.id,
            session_id=session_id,
            tool_name=self.tool_name,
            tool_description=self.describe(),
            args=args,
            args_hash=self.args_hash,
            timestamp=self.timestamp,
            task_id=self.task_id,
            query_id=self.query_id,
            size=self.size,
            storage=self.storage,
            filename=self.filename if on_disk else None,
            filepath=path if on_disk else None,
            is_error=self.is_error,
            tokens=self.tokens,
            preview=self.preview,
            call_id=self.call_id,
        )

    @property
    def preview(self) -> str:
        """The first 200 characters of the result (kept once the output leaves memory)."""
        if self._preview is not None:
            return self._preview
        return self._derive_preview(PREVIEW_CHARS)

    def _derive_preview(self, limit: int) -> str:
        payload = self.payload
        if payload is None:  # spilled meanwhile: on_disk() kept the preview
            return self._preview or ""
        data = payload[1]
        text = orjson.loads(data) if self.plain else None
        return preview_of(text if isinstance(text, str) else None, data, limit)

    def index_text(self) -> str:
        """What the search index reads of the result: 1,000 characters while they are at hand."""
        if self.payload is None:
            return self.preview
        return self._derive_preview(INDEX_PREVIEW_CHARS)

    def search_text(self) -> str:
        """What the search index weighs most: tool name, description and arguments."""
        return f"{self.tool_name} {self.describe()} {shorten_args(self.args_json).decode()}"

    def on_disk(self) -> None:
        """The document is now in the store: drop the in-memory copy and keep small args only."""
        if self._preview is None:
            self._preview = self._derive_preview(PREVIEW_CHARS)
        self.storage = StorageKind.DISK
        self.payload = None
        self.args_json = shorten_args(self.args_json)

    def manifest_line(self) -> bytes:
        entry = {
            "op": "put",
            "id": self.id,
            "file": self.filename,
            "tool_name": self.tool_name,
            "tool_description": self.describe(),
            "args": orjson.Fragment(shorten_args(self.args_json)),
            "args_hash": self.args_hash,
            "ts": self.timestamp_ns,
            "task_id": self.task_id,
            "query_id": self.query_id,
            "size": self.size,
            "error": self.is_error,
            "tokens": self.tokens,
            "preview": self.preview,
            "call_id": self.call_id,
        }
        return orjson.dumps(entry) + b"\n"


def _from_file(filename: str, **fields: Any) -> Record:
    parsed = parse_context_filename(filename)
    record_id = str(fields.pop("id"))
    # The id is the random part then the counter in hex. It is read from the id, not the
    # file name: a repeated identical call shares the file of the first one.
    if parsed is None or len(record_id) <= len(parsed.rand):
        raise ValueError(f"{filename!r} / {record_id!r} is not a context file name and id")
    rand, counter = record_id[: len(parsed.rand)], int(record_id[len(parsed.rand) :], 16)
    record = Record(
        id=record_id,
        counter=counter,
        rand=rand,
        safe_name=parsed.tool,
        storage=StorageKind.DISK,
        payload=None,
        **fields,
    )
    record._filename = filename
    return record


def record_from_manifest(entry: Mapping[str, Any]) -> Record:
    """Rebuild a record from one manifest line (raises on anything malformed)."""
    return _from_file(
        str(entry["file"]),
        id=str(entry["id"]),
        tool_name=str(entry["tool_name"]),
        description=str(entry["tool_description"]),
        args_json=orjson.dumps(entry["args"]),
        args_hash=str(entry["args_hash"]),
        timestamp_ns=int(entry["ts"]),
        task_id=entry.get("task_id"),
        query_id=entry.get("query_id"),
        size=int(entry["size"]),
        is_error=bool(entry.get("error", False)),
        tokens=int(entry.get("tokens", 0)),
        preview=str(entry.get("preview", "")),
        call_id=entry.get("call_id"),
    )


def record_from_context(context: StoredContext, filename: str) -> Record:
    """Rebuild a record from a stored document (for files the manifest does not list)."""
    result_json = orjson.dumps(context.result)
    return _from_file(
        filename,
        id=context.id,
        tool_name=context.tool_name,
        description=context.tool_description,
        args_json=shorten_args(orjson.dumps(context.args)),
        args_hash=context.args_hash,
        timestamp_ns=int(context.timestamp.timestamp() * 1e9),
        task_id=context.task_id,
        query_id=context.query_id,
        size=len(result_json),
        is_error=context.error is not None,
        tokens=estimate_tokens(result_json),
        call_id=context.call_id,
        preview=preview_of(context.result if isinstance(context.result, str) else None, result_json),
    )


def parse_document(blob: bytes) -> StoredContext:
    """Parse a stored document; raises ValueError if it is not one of ours."""
    document = orjson.loads(blob)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError("not a toolctx context document")
    return StoredContext.model_validate(document)


def error_info(error: BaseException | ErrorInfo, redactor: Redactor | None = None) -> ErrorInfo:
    """The stored form of an exception (type, message, traceback): encodable, secrets redacted."""
    if isinstance(error, ErrorInfo):
        kind, message, text = error.type, error.message, error.traceback
    else:
        kind, text = type(error).__qualname__, "".join(traceback.format_exception(error))
        try:
            message = str(error)
        except Exception:
            message = f"<str() of {kind} failed>"

    def clean(value: str) -> str:
        value = clean_text(value)
        return value if redactor is None else redactor.redact_text(value)

    return ErrorInfo(
        type=clean_text(kind),
        message=clean(message[:20_000]),
        traceback=None if text is None else clean(text[-20_000:]),
    )


def shorten_args(args_json: bytes) -> bytes:
    """A smaller JSON form of large arguments for pointers; the document keeps them whole."""
    if len(args_json) <= ARGS_INLINE_LIMIT:
        return args_json

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
    if len(data) > ARGS_INLINE_LIMIT:
        data = orjson.dumps({"$truncated": f"{len(args_json)} bytes of arguments; load the context for all of them"})
    return memoryview(data).tobytes()
