"""``toolctx show``: one stored context, read whole only when it is small or asked for.

A context of up to ``--length`` bytes (1 MiB by default) is parsed and printed in
full. A larger one is not read whole (a stored result can be gigabytes): the call is
described from the session's manifest, the first ``--length`` bytes of its stored
document follow, and a last line says how much was left out and how to read on
(``--offset``) or read all of it (``--full``). Everything stored is printed through
:func:`~toolctx.cli._text.visible`.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from rich.text import Text

from toolctx._excerpt import ContextExcerpt, document_size, excerpt_of, locate
from toolctx.cli._output import emit_json, out, visible
from toolctx.models import ContextPointer, StoredContext
from toolctx.sessions import read_session_context

__all__ = ["show_context"]


def _describe(call: ContextPointer | StoredContext) -> list[str]:
    return [
        visible(f"{call.tool_name}: {call.tool_description}"),
        visible(f"id {call.id}   session {call.session_id}   at {call.timestamp:%Y-%m-%d %H:%M:%S} UTC"),
        "arguments: " + visible(orjson.dumps(call.args).decode()),
    ]


def _whole(context: StoredContext) -> str:
    lines = _describe(context)
    if context.error is not None:
        lines.append(visible(f"error: {context.error.type}: {context.error.message}", lines=True))
    if context.notes:
        lines.append(visible("notes: " + ", ".join(context.notes)))
    lines += ["", visible(orjson.dumps(context.result, option=orjson.OPT_INDENT_2).decode(), lines=True)]
    return "\n".join(lines)


def _part(pointer: ContextPointer, excerpt: ContextExcerpt) -> str:
    lines = _describe(pointer)
    if pointer.is_error:
        lines.append("error: the call failed (its error is in the stored document below)")
    command = f"toolctx show {visible(pointer.session_id)} {visible(pointer.id)}"
    lines += [
        f"stored document, bytes {excerpt.offset:,} to {excerpt.end:,} of {excerpt.size:,}:",
        "",
        visible(excerpt.text, lines=True),
        "",
    ]
    if excerpt.left_out:
        ahead = f"; the next part: `{command} --offset {excerpt.next_offset}`" if excerpt.next_offset else ""
        lines.append(
            f"… {excerpt.left_out:,} of {excerpt.size:,} bytes left out{ahead}; all of it: `{command} --full` "
            "(reads it whole)"
        )
    return "\n".join(lines)


def show_context(
    session_id: str,
    context_id: str,
    folder: Path | None,
    *,
    json: bool,
    pager: bool,
    full: bool,
    offset: int | None,
    length: int,
) -> None:
    """Print one stored context: whole if small or ``full``, else the window ``offset``, ``length`` of it."""
    found = read_session_context(session_id, context_id, folder) if full else locate(session_id, context_id, folder)
    if isinstance(found, ContextPointer):
        if offset is not None or document_size(found) > length:
            excerpt = excerpt_of(found, offset or 0, length)
            _print(excerpt, _part(found, excerpt), json=json, pager=pager)
            return
        found = read_session_context(session_id, found.id, folder)
    _print(found, _whole(found), json=json, pager=pager)


def _print(value: StoredContext | ContextExcerpt, shown: str, *, json: bool, pager: bool) -> None:
    if json:
        emit_json(value)
        return
    text = Text(shown)
    if pager and out.is_terminal:
        with out.pager():
            out.print(text)
    else:
        out.print(text)
