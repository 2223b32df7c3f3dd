"""What a model sees instead of a big or old tool output or argument, and how it reads it back.

Every stand-in starts with :data:`STAND_IN_MARK` and names the handle
``ctx:<id>`` of the stored call:

- :func:`stand_in` replaces a big output when the tool returns: its start and
  end, its size and how to read more;
- :func:`result_marker` replaces an old output when the conversation is
  compacted: the handle and the size (and, if asked, the first characters);
- :func:`argument_stand_in` replaces a long string argument of an old call,
  inside the arguments, so they stay valid JSON for the framework;
- :func:`text_marker` replaces what the model itself wrote between old tool
  calls (stored as a call of :data:`ASSISTANT_TEXT`).

Each is cut from the stored (redacted) copy, the very text :func:`read_context`
returns for the handle (``part="args.<name>"`` for an argument), so sizes and
offsets agree and nothing the store redacted reaches the model through a preview.
A read-back that shows redaction marks says so in its header line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from toolctx._checks import whole_number
from toolctx._internal import internal_error
from toolctx._naming import HANDLE_PATTERN, handle
from toolctx._navigate import by_lines, by_path, by_search, output_text
from toolctx.compaction._settings import READ_CONTEXT
from toolctx.errors import ConfigError, HandleError
from toolctx.models import CallMetadata
from toolctx.sessions import ContextSession, ambient_scope, argument_text, parse_reference, stored_text, within
from toolctx.telemetry import events
from toolctx.tokens import estimate_tokens

__all__ = [
    "ASSISTANT_TEXT",
    "DEFAULT_READ_LIMIT",
    "READ_CONTEXT_DEFINITION",
    "READ_CONTEXT_DESCRIPTION",
    "READ_CONTEXT_PARAMETERS",
    "STAND_IN_MARK",
    "answer_read_context",
    "argument_stand_in",
    "argument_text",
    "handle_of",
    "is_stand_in",
    "output_text",
    "read_context",
    "result_marker",
    "showing",
    "stand_in",
    "stored_text",
    "text_marker",
]

STAND_IN_MARK = "[toolctx stand-in]"
DEFAULT_READ_LIMIT = 4000
ASSISTANT_TEXT = "assistant_text"
"""The tool name old assistant text is stored under when compaction stands in for it."""


_showing: ContextVar[set[str] | None] = ContextVar("toolctx_showing", default=None)


@contextlib.contextmanager
def showing() -> Iterator[set[str]]:
    """Within the block, the ids of the stored calls whose handles stand-ins and markers are cut with (a model
    call about to show them waits for just those to be in a shared store)."""
    ids: set[str] = set()
    token = _showing.set(ids)
    try:
        yield ids
    finally:
        _showing.reset(token)


def _shown(pointer_id: str) -> str:
    """The handle of ``pointer_id``, noted by the :func:`showing` block around (if any)."""
    ids = _showing.get()
    if ids is not None:
        ids.add(pointer_id)
    return handle(pointer_id)


def stand_in(call: CallMetadata, text: str, head: int = 1500, tail: int = 500) -> str:
    """The restorable replacement for a big output ``text`` (the stored copy): its start and end, size, handle.

    ``call`` is the stored call (its pointer, or the loaded context).
    """
    if len(text) <= head + tail:
        shown = text
    elif tail:
        shown = f"{text[:head]}\n[... {len(text) - head - tail:,} characters not shown ...]\n{text[-tail:]}"
    else:
        shown = f"{text[:head]} [...]"
    about = f" ({call.tool_description})" if call.tool_description else ""
    ref = _shown(call.id)
    return (
        f"{STAND_IN_MARK} The output of {call.tool_name}{about} is stored as "
        f"{ref}: {len(text):,} characters, about {estimate_tokens(text):,} tokens. "
        f'To read more, call read_context(id="{ref}", offset=<character>, limit=<characters>), or with '
        f'lines="<from>-<to>" or search="<text>".\n'
        f"{shown}"
    )


def result_marker(pointer_id: str, text: str, preview: int = 0) -> str:
    """The short stand-in compaction leaves for an old output ``text`` (the stored copy): the handle and the size
    (the message it stands in names the tool already), and the first ``preview`` characters if asked."""
    ref = _shown(pointer_id)
    marker = f"{STAND_IN_MARK} {ref} ({len(text):,} chars)"
    if preview and text:
        return f"{marker}\n{text[:preview]}{' [...]' if len(text) > preview else ''}"
    return marker


def text_marker(pointer_id: str, text: str) -> str:
    """The short stand-in compaction leaves for old assistant ``text`` (the stored copy)."""
    ref = _shown(pointer_id)
    return f"{STAND_IN_MARK} {ref} ({len(text):,} chars of earlier assistant text)"


def argument_stand_in(pointer_id: str, name: str, value: str, preview: int = 60) -> str:
    """The string that replaces a long argument ``value`` (the stored copy) inside an old call's arguments."""
    ref = _shown(pointer_id)
    start = value[:preview].replace("\n", " ") + (" [...]" if len(value) > preview else "")
    return f"{STAND_IN_MARK} {ref}#args.{name}: {len(value):,} characters. Starts: {start}"


def is_stand_in(text: object) -> bool:
    """Whether ``text`` is a stand-in for an output or an argument."""
    return isinstance(text, str) and text.startswith(STAND_IN_MARK)


def handle_of(text: str) -> str | None:
    """The pointer id named in a stand-in, if any."""
    match = HANDLE_PATTERN.search(text[:1000]) if is_stand_in(text) else None
    return match.group(1) if match else None


READ_CONTEXT_DESCRIPTION = (
    'Read back a stored tool output (or, with part="args.<name>", an argument) by the handle ctx:<id> '
    'named in a [toolctx stand-in]: limit characters from offset; or lines="120-180"; or the lines '
    'holding search="text" (regex=true: a regular expression), context lines around each; or a JSON path="$.a[0]".'
)
"""What the model is told the ``read_context`` tool does (every adapter sends these words)."""

READ_CONTEXT_PARAMETERS: dict[str, Any] = {
    "properties": {
        "id": {"type": "string"},
        "offset": {"default": 0, "type": "integer"},
        "limit": {"default": DEFAULT_READ_LIMIT, "type": "integer"},
        "part": {"default": "result", "type": "string"},
        "lines": {"type": "string"},
        "search": {"type": "string"},
        "regex": {"default": False, "type": "boolean"},
        "context": {"default": 2, "type": "integer"},
        "path": {"type": "string"},
    },
    "required": ["id"],
    "type": "object",
}
"""The JSON schema of ``read_context``'s arguments (:func:`read_context`'s; ``ref`` is named ``id`` for the
model)."""

_READ_ARGUMENTS = tuple(READ_CONTEXT_PARAMETERS["properties"])


@events.read_back
def answer_read_context(
    session: ContextSession, given: Mapping[str, Any], *, scope: int | str | tuple[int | str | None, ...] | None = None
) -> str:
    """The answer to a model's ``read_context`` call with the (JSON) arguments ``given``, reading only calls of
    ``scope``: a missing id, a wrong type or a stray key is answered in words, as every host answers it."""
    if not isinstance(given, Mapping):
        return f"read_context takes an object of arguments ({', '.join(_READ_ARGUMENTS)}); got {given!r:.100}."
    unknown = sorted(set(given) - set(_READ_ARGUMENTS))
    if unknown:
        return f"read_context takes {', '.join(_READ_ARGUMENTS)}; got {unknown!r:.200}."
    regex = given.get("regex", False)
    if not isinstance(regex, bool):
        return f"regex must be true or false, got {regex!r:.40}."
    return read_context(
        session,
        given.get("id", ""),
        given.get("offset", 0),
        given.get("limit", DEFAULT_READ_LIMIT),
        given.get("part", "result"),
        scope=scope,
        lines=given.get("lines"),
        search=given.get("search"),
        regex=regex,
        context=given.get("context", 2),
        path=given.get("path"),
    )


READ_CONTEXT_DEFINITION: dict[str, Any] = {
    "type": "function",
    "function": {"name": READ_CONTEXT, "description": READ_CONTEXT_DESCRIPTION, "parameters": READ_CONTEXT_PARAMETERS},
}
"""``read_context`` as an OpenAI chat-completions tool definition."""


@events.read_back
def read_context(
    session: ContextSession,
    ref: str,
    offset: int = 0,
    limit: int = DEFAULT_READ_LIMIT,
    part: str = "result",
    *,
    scope: int | str | tuple[int | str | None, ...] | None = None,
    lines: str | None = None,
    search: str | None = None,
    regex: bool = False,
    context: int = 2,
    path: str | None = None,
) -> str:
    """The stored output (or arguments) behind a handle, from ``offset`` for ``limit`` characters.

    Or, at most ``limit`` characters of it: ``lines`` (``"120-180"``, counted from 1),
    the lines that hold ``search`` (plain text, or with ``regex`` a regular
    expression) with ``context`` lines around each, numbered as ``grep -n`` does, or
    the value at a JSON ``path`` (``"$.items[0].name"``) of a JSON output, paged by
    ``offset``. One of the three at a time.

    ``part`` is ``"result"`` (the output), ``"args"`` (all arguments, as JSON) or
    ``"args.<name>"`` (one argument; a string comes back as it is). Meant as the body
    of a ``read_context`` tool: every problem comes back as a message the model can
    act on, never as an exception. With ``scope`` (a conversation's task id, or a
    tuple of the ones it may read), a call stored under another task reads exactly
    like one that does not exist, so a conversation learns nothing about another's
    outputs. Without it, the scope is the conversation's around the call
    (``toolctx.sessions.ambient_scope``): a ``Conversations`` session's calls are
    all its conversation's; in another session, the conversation an adapter serves
    around the call, else the enclosing ``session.task()`` block's task (calls an
    adapter stored under its own thread are read with ``scope=`` that thread),
    else any of its calls. The last two follow ``contextvars``: in a thread
    started without them, pass ``scope=``.

    The text comes back as stored, secrets redacted. When what it shows holds the
    session's redaction mark, the header line says how many secrets were replaced by
    it and asks the model not to copy the mark into a file but to ask the user for the
    real values (the line still ends with ``]``, the text starts on the next line).
    """
    if not isinstance(ref, str) or not ref.strip():
        return f'read_context needs the id of a stored output, for example id="{handle("1a2b3c4")}".'
    try:
        whole_number("offset", offset, unit="characters")
        whole_number("limit", limit, minimum=1, unit="characters")
    except ConfigError as exc:
        return f"{exc}."
    part = part.strip() if isinstance(part, str) else ""
    if part not in ("result", "args") and not part.startswith("args."):
        return f'part must be "result", "args" or "args.<name>", got {part!r:.80}.'
    asked = [name for name, given in (("lines", lines), ("search", search), ("path", path)) if given is not None]
    if len(asked) > 1:
        return f"read_context reads by lines, search or path, one at a time; got {' and '.join(asked)}."
    key = ref.strip()
    if "#" in key:  # a handle with its part or selection, as argument stand-ins write it
        try:
            reference = parse_reference(key)
        except HandleError as exc:
            return str(exc)
        if reference is not None:
            if reference.part != "result" and part not in ("result", reference.part):
                return f"{key!r:.120} names {reference.part}, and part={part!r:.80} another: give one of them."
            if reference.lines is not None or reference.path is not None:
                if asked:
                    return f"{key!r:.120} selects lines or a path already: give no lines, search or path with it."
                lines, path = reference.lines, reference.path
                asked = ["lines" if lines is not None else "path"]
            key, part = reference.id, reference.part if reference.part != "result" else part
    if scope is None:
        try:
            scope = ambient_scope(session)
        except Exception as exc:  # (an adapter's own lookup of its conversation failed)
            internal_error(f"could not tell which conversation reads {key!r:.60}", exc)
            return f"{key!r:.120} could not be read just now ({type(exc).__name__}); try again."
    scopes = within(session, scope)
    missing = (
        f"No stored output {key!r} in this session. Use an id from a stand-in, written {handle('<id>')}; "
        "it may also have been cleared."
    )
    # (a page of the output: one ranged read, if it can)
    page = session.result_page(key, offset, limit) if part == "result" and not asked else None
    marker = None if session.redactor is None else session.redactor.replacement
    if page is not None:
        if scopes is not None and page.task_id not in scopes:
            return missing
        return _noting(marker, _page(page.id, part, offset, offset + len(page.text), page.chars, page.text))
    found = session.load_contexts([key])
    if found and scopes is not None and found[0].task_id not in scopes:
        found = []
    if not found:
        return missing
    stored = found[0]
    if part == "result":
        text: str | None = stored_text(stored)
    else:
        text = argument_text(stored, part[5:] or None if part != "args" else None)
    if text is None:
        return f"{handle(stored.id)} has no argument {part[5:]!r}; its arguments are {sorted(stored.args)}."
    named = handle(stored.id) + ("" if part == "result" else f" {part}")
    if lines is not None:
        return _noting(marker, by_lines(text, named, lines, limit))
    if search is not None:
        return _noting(marker, by_search(text, named, search, bool(regex), context, limit))
    if path is not None:
        return _noting(marker, by_path(text, named, path, offset, limit))
    if offset >= len(text) and not (offset == 0 and not text):
        return f"offset {offset:,} is past the end of {handle(stored.id)}, which has {len(text):,} characters."
    end = min(len(text), offset + limit)
    return _noting(marker, _page(stored.id, part, offset, end, len(text), text[offset:end]))


def _noting(marker: str | None, answer: str) -> str:
    """``answer`` with a word in its header line (before its closing ``]``) when the stored text it shows holds
    ``marker``, the session's redaction mark: the model must not take the marks for the text and copy them."""
    header, newline, shown = answer.partition("\n")
    if not marker or not newline or not header.endswith("]") or marker not in shown:
        return answer
    count = shown.count(marker)
    secrets, were, values = ("1 secret", "was", "value") if count == 1 else (f"{count:,} secrets", "were", "values")
    return (
        f"{header[:-1]} {secrets} here {were} replaced by {marker} when stored: do not copy {marker} into a file; "
        f"ask the user for the real {values}.]\n{shown}"
    )


def _page(pointer_id: str, part: str, offset: int, end: int, chars: int, text: str) -> str:
    """What :func:`read_context` returns for characters ``offset`` to ``end`` of a text of ``chars``."""
    more = f" {chars - end:,} more characters follow; continue with offset={end}." if end < chars else ""
    what = "" if part == "result" else f" {part}"
    return f"[{handle(pointer_id)}{what} characters {offset:,}-{end:,} of {chars:,}.{more}]\n{text}"
