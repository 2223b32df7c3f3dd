"""What a model sees instead of a big or old tool output, and how it reads the rest back.

Framework adapters share these pieces:

- :func:`output_text` is the text a model is shown for a tool result;
- :func:`stand_in` is the restorable replacement: the start and end of the
  output, its size, and the handle ``ctx:<id>`` with how to read more;
- :func:`read_context` is what the ``read_context`` tool returns for a handle,
  an offset and a limit, with a plain message (never an exception) when the
  handle is unknown or the offset is past the end;
- :func:`compactable` applies the compaction rules to a conversation's tool
  results: keep the most recent ``keep``, never touch error results, excluded
  tools or results that already are stand-ins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from toolctx._checks import whole_number
from toolctx._naming import HANDLE_PATTERN, handle
from toolctx.errors import ConfigError
from toolctx.models import ContextPointer, StoredContext
from toolctx.sessions import ContextSession
from toolctx.tokens import estimate_tokens

__all__ = [
    "COMPACTED_MARK",
    "DEFAULT_READ_LIMIT",
    "STAND_IN_MARK",
    "ResultEntry",
    "compactable",
    "handle_of",
    "is_compacted",
    "is_stand_in",
    "output_text",
    "read_context",
    "stand_in",
    "stored_text",
]

STAND_IN_MARK = "[toolctx stand-in]"
COMPACTED_MARK = "[toolctx stand-in, compacted]"
DEFAULT_READ_LIMIT = 4000


def output_text(result: Any) -> str:
    """A tool result as the text a model reads: strings as they are, anything else as JSON."""
    if isinstance(result, str):
        return result
    if isinstance(result, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in result):
        return "".join(str(b.get("text", "")) for b in result)  # chat content blocks
    try:
        return orjson.dumps(result, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    except TypeError:
        return str(result)


def stand_in(pointer: ContextPointer, text: str, head: int = 1500, tail: int = 500, *, brief: bool = False) -> str:
    """The restorable replacement for ``text``: its start and end, its size and its handle.

    ``brief`` gives the short form used when compacting older results.
    """
    if len(text) <= head + tail:
        shown = text
    elif tail:
        shown = f"{text[:head]}\n[... {len(text) - head - tail:,} characters not shown ...]\n{text[-tail:]}"
    else:
        shown = f"{text[:head]} [...]"
    if brief:
        return (
            f"{COMPACTED_MARK} {pointer.tool_name} output, {len(text):,} characters, stored as {pointer.handle}; "
            f'read_context(id="{pointer.handle}") reads it.\n{shown}'
        )
    return (
        f"{STAND_IN_MARK} The output of {pointer.tool_name} ({pointer.tool_description}) is stored as "
        f"{pointer.handle}: {len(text):,} characters, about {estimate_tokens(text):,} tokens. "
        f'To read more, call read_context(id="{pointer.handle}", offset=<character>, limit=<characters>).\n'
        f"{shown}"
    )


def is_stand_in(text: object) -> bool:
    """Whether ``text`` is a stand-in, from a tool call or from compaction."""
    return isinstance(text, str) and (text.startswith((STAND_IN_MARK, COMPACTED_MARK)))


def is_compacted(text: object) -> bool:
    """Whether ``text`` is the short stand-in compaction leaves."""
    return isinstance(text, str) and text.startswith(COMPACTED_MARK)


def handle_of(text: str) -> str | None:
    """The pointer id named in a stand-in, if any."""
    match = HANDLE_PATTERN.search(text[:1000]) if is_stand_in(text) else None
    return match.group(1) if match else None


def _stored_text(context: StoredContext) -> str:
    result = context.result
    if isinstance(result, dict) and set(result) == {"content", "artifact"}:
        result = result["content"]  # a chat tool message: what the model saw is the content
    return output_text(result)


def stored_text(session: ContextSession, ref: str) -> str | None:
    """The full text a model would have been shown for a stored output, or None if there is none."""
    found = session.load_contexts([ref])
    return _stored_text(found[0]) if found else None


def read_context(session: ContextSession, ref: str, offset: int = 0, limit: int = DEFAULT_READ_LIMIT) -> str:
    """The stored output behind a handle, from ``offset`` for ``limit`` characters.

    Meant as the body of a ``read_context`` tool: every problem comes back as a
    message the model can act on, never as an exception.
    """
    if not isinstance(ref, str) or not ref.strip():
        return f'read_context needs the id of a stored output, for example id="{handle("1a2b3c4")}".'
    try:
        whole_number("offset", offset, unit="characters")
        whole_number("limit", limit, minimum=1, unit="characters")
    except ConfigError as exc:
        return f"{exc}."
    key = ref.strip()
    found = session.load_contexts([key])
    if not found:
        return (
            f"No stored output {key!r} in this session. Use an id from a stand-in, written {handle('<id>')}; "
            "it may also have been cleared."
        )
    context = found[0]
    text = _stored_text(context)
    if context.error is not None:
        text = text or f"{context.error.type}: {context.error.message}"
    if offset >= len(text) and not (offset == 0 and not text):
        return f"offset {offset:,} is past the end of {handle(context.id)}, which has {len(text):,} characters."
    end = min(len(text), offset + limit)
    more = f" {len(text) - end:,} more characters follow; continue with offset={end}." if end < len(text) else ""
    return f"[{handle(context.id)} characters {offset:,}-{end:,} of {len(text):,}.{more}]\n{text[offset:end]}"


@dataclass(frozen=True)
class ResultEntry:
    """One tool result in a conversation, as the compaction rules see it."""

    position: int
    tool_name: str
    is_error: bool
    already_stand_in: bool


def compactable(entries: Sequence[ResultEntry], *, keep: int, exclude: frozenset[str]) -> list[ResultEntry]:
    """The results to replace by stand-ins: all but the ``keep`` most recent, and never an error,
    an excluded tool or a result that already is a stand-in."""
    older = list(entries[:-keep]) if keep > 0 else list(entries)
    return [e for e in older if not (e.is_error or e.already_stand_in or e.tool_name in exclude)]
