"""What a session remembers about each stored call, and the two forms it writes.

A :class:`Record` is the session's note of one call: the fields of the :class:`Call`
it was given (redacted in place) plus where the output lives. It is cheap to create:
the file name, the description (unless the tool sets its own) and the stored
document are only built when something needs them.

Both on-disk forms are made from one definition, :class:`~toolctx.models.CallMetadata`:

- the stored document (one per file, what ``load_contexts`` parses)::

      {"format": "toolctx/1", <CallMetadata fields>, "error", "notes", "result"}

  with ``result`` last, so a large result is written straight after the header
  without being copied into it;
- the manifest line: ``{"op": "put", "file", <ContextPointer fields but the
  session id, file and storage>}``, enough to rebuild the pointer without reading
  the file.
"""

from __future__ import annotations

import traceback
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import orjson

from toolctx._defaults import ARGS_INLINE_LIMIT, INDEX_PREVIEW_CHARS, PREVIEW_CHARS
from toolctx._describe import default_description
from toolctx._internal import describe_error
from toolctx._naming import POINTER_ID, context_filename, parse_context_filename
from toolctx._serialize import clean_text
from toolctx.models import FORMAT, CallMetadata, ContextPointer, ErrorInfo, StorageKind, StoredContext, trusted
from toolctx.redaction import Redactor
from toolctx.sessions._echoes import scrub_text
from toolctx.sessions._spans import Spans, checked_spans
from toolctx.tokens import estimate_tokens

__all__ = [
    "CALL_FIELDS",
    "Call",
    "CallParts",
    "Payload",
    "Record",
    "error_info",
    "parse_document",
    "parse_manifest_line",
    "preview_of",
    "record_from_context",
    "shorten_args",
]

_SESSION_FIELDS = frozenset({"id", "session_id", "tool_description", "args", "args_hash", "timestamp"})
CALL_FIELDS: tuple[str, ...] = tuple(name for name in CallMetadata.model_fields if name not in _SESSION_FIELDS)
"""The metadata fields a :class:`Call` carries itself (the session adds the others)."""
_METADATA_FIELDS = tuple(CallMetadata.model_fields)
_POINTER_ONLY = ("size", "is_error", "tokens", "preview")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NS = timedelta(microseconds=1)

Payload = tuple[bytes, ErrorInfo | None, tuple[str, ...]]
"""What an in-memory record holds besides its arguments: result JSON, error, fallback notes."""


class Call:
    """One call handed to the save path: who was called, with what, tagged how.

    ``args_json`` is the canonical JSON of the bound arguments; the save path
    replaces it with the redacted, exact-size copy it keeps. ``order`` is the
    tool's parameter order (for showing arguments), ``threshold`` the tool's own
    size threshold (None: the session's). ``task_id`` and ``query_id`` left None
    are filled from the enclosing ``task()``/``query()`` blocks.
    """

    __slots__ = (
        "args_json",
        "args_notes",
        "call_id",
        "description",
        "order",
        "query_id",
        "safe_name",
        "task_id",
        "threshold",
        "tool_name",
    )

    def __init__(
        self,
        tool_name: str,
        safe_name: str,
        args_json: bytes,
        args_notes: tuple[str, ...] = (),
        order: tuple[str, ...] = (),
        description: str | None = None,
        threshold: int | None = None,
        task_id: int | str | None = None,
        query_id: str | None = None,
        call_id: str | None = None,
    ) -> None:
        self.tool_name = tool_name
        self.safe_name = safe_name
        self.args_json = args_json
        self.args_notes = args_notes
        self.order = order
        self.description = description
        self.threshold = threshold
        self.task_id = task_id
        self.query_id = query_id
        self.call_id = call_id


class CallParts(NamedTuple):
    """What compaction reads back of a stored call: the parts of its :class:`~toolctx.StoredContext` it cuts
    stand-ins from, without the metadata a context is built with."""

    id: str
    tool_name: str
    task_id: int | str | None
    args: dict[str, Any]
    result: Any
    error: ErrorInfo | None


def preview_of(text: str | None, data: bytes, limit: int = PREVIEW_CHARS) -> str:
    """The start of a result as text: ``text`` when the result is a plain string, else its JSON."""
    if text is not None:
        return text[:limit]
    return data[: limit * 4].decode("utf-8", "ignore")[:limit]


class Record(Call):
    """One stored call. ``payload`` is set while the output lives in memory.

    A record is its call: it takes the :class:`Call`'s fields when made (``record.call``
    is the record itself), so a session holds one object per call. Every record lives
    as long as its session, and each object the garbage collector tracks makes its
    collections longer and more frequent; the call handed in is dropped when saved.
    """

    __slots__ = (
        "_filename",
        "_preview",
        "_tokens",
        "args_hash",
        "counter",
        "id",
        "is_error",
        "payload",
        "plain",
        "size",
        "spans",
        "storage",
        "timestamp_ns",
    )

    def __init__(
        self,
        id: str,
        call: Call,
        args_hash: str,
        timestamp_ns: int,
        size: int,
        is_error: bool,
        tokens: int | None,
        plain: bool = False,
        preview: str | None = None,
        counter: int = 0,
    ) -> None:
        self.tool_name = call.tool_name
        self.safe_name = call.safe_name
        self.args_json = call.args_json
        self.args_notes = call.args_notes
        self.order = call.order
        self.description = call.description
        self.threshold = call.threshold
        self.task_id = call.task_id
        self.query_id = call.query_id
        self.call_id = call.call_id
        self.id = id
        self.counter = counter  # the call's place in its session, which orders its file among the others
        self.args_hash = args_hash
        self.timestamp_ns = timestamp_ns
        self.size = size
        self.is_error = is_error
        self._tokens = tokens  # None: estimated from the in-memory payload when first asked for
        self.plain = plain  # the result is a plain string, previewed as text rather than JSON
        self._preview = preview  # None: derived from the in-memory payload when asked for
        self.storage = StorageKind.NONE
        self.payload: Payload | None = None
        self._filename: str | None = None
        self.spans: Spans | None = None  # where the characters of a long string result lie in its document

    @property
    def call(self) -> Call:
        """The call this record stores: the record itself, which holds the call's fields."""
        return self

    @property
    def tokens(self) -> int:
        """The estimated tokens of the stored output (worked out on first use while it is in memory)."""
        tokens = self._tokens
        if tokens is None:
            payload = self.payload
            if payload is not None:
                tokens = self._tokens = estimate_tokens(payload[0])
            else:  # moved to the store meanwhile: on_disk() estimated it before dropping the payload
                tokens = self._tokens or 0
        return tokens

    @property
    def filename(self) -> str:
        # Built from the record's parts each time (not cached: ~100 bytes per call saved);
        # set explicitly for calls sharing an earlier file or recovered from disk.
        if self._filename is not None:
            return self._filename
        ts_ms = self.timestamp_ns // 1_000_000
        return context_filename(self.safe_name, self.args_hash, ts_ms, self.counter, self.id)

    @property
    def timestamp(self) -> datetime:
        return _EPOCH + timedelta(microseconds=self.timestamp_ns // 1000)

    def args(self) -> dict[str, Any]:
        """The arguments (shortened if large) in the tool's parameter order."""
        args: dict[str, Any] = orjson.loads(shorten_args(self.args_json))
        order = self.order
        if not order:
            return args
        ordered = {name: args.pop(name) for name in order if name in args}
        ordered.update(args)
        return ordered

    def filed_under(self) -> tuple[int | str | None, str | None]:
        """The task and framework call id the session finds this call by."""
        return self.call.task_id, self.call.call_id

    def describe(self) -> str:
        """The call's description, built from its arguments on first use unless the tool set one."""
        if self.description is None:
            self.description = default_description(self.tool_name, self.args())
        return self.description

    def metadata(self, session_id: str, args: Any) -> dict[str, Any]:
        """The :class:`~toolctx.models.CallMetadata` fields of this call in their order, ``args`` in the form wanted."""
        fields = {
            "id": self.id,
            "session_id": session_id,
            "tool_description": self.describe(),
            "args": args,
            "args_hash": self.args_hash,
            "timestamp": self.timestamp,
        }
        for name in CALL_FIELDS:
            fields[name] = getattr(self, name)
        return {name: fields[name] for name in _METADATA_FIELDS}

    def document(self, session_id: str, payload: Payload) -> tuple[bytes, ...]:
        """The full stored document, as chunks to write one after another."""
        result, error, notes = payload
        header = self.metadata(session_id, orjson.Fragment(self.args_json))
        header = {
            "format": FORMAT,
            **header,
            "error": None if error is None else error.model_dump(),
            "notes": list(notes),
        }
        return orjson.dumps(header)[:-1], b',"result":', result, b"}"

    def context(self, session_id: str, payload: Payload) -> StoredContext:
        """The StoredContext of an in-memory record, without a JSON round trip of the header."""
        result, error, notes = payload
        fields = self.metadata(session_id, orjson.loads(self.args_json))
        fields.update(result=orjson.loads(result), error=error, notes=list(notes))
        return trusted(StoredContext, fields)  # every value is toolctx's own and already valid

    def pointer(self, session_id: str, path: str | None) -> ContextPointer:
        """A fresh pointer; ``path`` is the file's path when the store has one."""
        on_disk = self.storage is StorageKind.DISK
        fields = self.metadata(session_id, self.args())
        fields.update(
            size=self.size,
            storage=self.storage,
            filename=self.filename if on_disk else None,
            filepath=path if on_disk else None,
            is_error=self.is_error,
            tokens=self.tokens,
            preview=self.preview,
        )
        return trusted(ContextPointer, fields)  # every value is toolctx's own and already valid

    def manifest_line(self) -> bytes:
        """The manifest's line for this call: the pointer's fields but the session id, file and storage."""
        entry = {
            "op": "put",
            "file": self.filename,
            **self.metadata("", orjson.Fragment(shorten_args(self.args_json))),
            "size": self.size,
            "is_error": self.is_error,
            "tokens": self.tokens,
            "preview": self.preview,
        }
        del entry["session_id"]
        if self.spans is not None:
            entry["spans"] = self.spans
        return orjson.dumps(entry) + b"\n"

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
        data = payload[0]
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

    def leaving_memory(self, preview: str, tokens: int) -> None:
        """Keep what the index and the pointer need of an output that goes to the store at once."""
        self._preview = preview
        self._tokens = tokens

    def in_file(self, filename: str) -> None:
        """The output is in ``filename``, written already (a repeated identical call shares it)."""
        self._filename = filename
        self.on_disk()

    def unwritten(self, args_json: bytes) -> None:
        """Back to unstored with its full arguments (the store was cleared while it was being written)."""
        self._filename, self.args_json, self.storage = None, args_json, StorageKind.NONE

    def on_disk(self, *, cached: bool = False) -> None:
        """The document is now in the store: drop the in-memory copy and keep small args only (``cached``: keep
        both for now, for reads that would otherwise go to a remote store; :meth:`uncache` drops them)."""
        if self._preview is None:
            self._preview = self._derive_preview(PREVIEW_CHARS)
        if self._tokens is None and self.payload is not None:  # estimated while the payload is at hand
            self._tokens = estimate_tokens(self.payload[0])
        self.storage = StorageKind.DISK
        if not cached:
            self.uncache()

    def uncache(self) -> None:
        """Drop the in-memory copy of a stored output (the payload first: a reader that finds it reads the
        full arguments with it)."""
        self.payload = None
        self.args_json = shorten_args(self.args_json)


def _from_file(filename: str, meta: CallMetadata, args_json: bytes, **fields: Any) -> Record:
    parsed = parse_context_filename(filename)
    # The id is read from the document, not the file name: a repeated identical call shares the
    # file of the first one.
    if parsed is None or POINTER_ID.fullmatch(meta.id) is None:
        raise ValueError(f"{filename!r} / {meta.id!r} is not a context file name and id")
    call = Call(
        safe_name=parsed.tool,
        args_json=args_json,
        description=meta.tool_description,
        **{name: getattr(meta, name) for name in CALL_FIELDS},
    )
    timestamp_ns = (meta.timestamp - _EPOCH) // _NS * 1000
    record = Record(meta.id, call, meta.args_hash, timestamp_ns, **fields, counter=parsed.counter)
    record.storage = StorageKind.DISK
    record._filename = filename
    return record


def parse_manifest_line(line: bytes, session_id: str) -> Record:
    """Rebuild a record from one manifest line (raises on anything malformed)."""
    entry = orjson.loads(line)
    if not isinstance(entry, dict) or entry.get("op") != "put":
        raise ValueError("not a manifest entry")
    filename = str(entry.pop("file"))
    spans = entry.pop("spans", None)
    pointer = ContextPointer.model_validate({**entry, "session_id": session_id, "storage": StorageKind.DISK})
    record = _from_file(
        filename,
        pointer,
        memoryview(orjson.dumps(pointer.args)).tobytes(),  # (orjson over-allocates: a copy keeps ~4 KB less a call)
        **{name: getattr(pointer, name) for name in _POINTER_ONLY},
    )
    record.spans = checked_spans(spans)
    return record


def record_from_context(context: StoredContext, filename: str) -> Record:
    """Rebuild a record from a stored document (for files the manifest does not list)."""
    result_json = orjson.dumps(context.result)
    return _from_file(
        filename,
        context,
        shorten_args(orjson.dumps(context.args)),
        size=len(result_json),
        is_error=context.error is not None,
        tokens=estimate_tokens(result_json),
        preview=preview_of(context.result if isinstance(context.result, str) else None, result_json),
    )


def parse_document(blob: bytes) -> StoredContext:
    """Parse a stored document; raises ValueError if it is not one of ours."""
    document = orjson.loads(blob)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError("not a toolctx context document")
    return StoredContext.model_validate(document)


def error_info(
    error: BaseException | ErrorInfo, redactor: Redactor | None = None, echoes: tuple[str, ...] = ()
) -> ErrorInfo:
    """The stored form of an exception (type, message, traceback): encodable, secrets redacted.

    ``echoes`` are secret argument values to remove wherever the message repeats them.
    """
    if isinstance(error, ErrorInfo):
        kind, message, text = error.type, error.message, error.traceback
    else:
        kind = type(error).__qualname__
        message = describe_error(error)
        try:
            text = "".join(traceback.format_exception(error))
        except KeyboardInterrupt:
            raise
        except BaseException:  # the exception's own __str__ raised something traceback does not catch
            text = None

    def clean(value: str) -> str:
        value = clean_text(value)
        return value if redactor is None else scrub_text(redactor.redact_text(value), echoes)

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
