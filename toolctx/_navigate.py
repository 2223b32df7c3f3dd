"""Finding one's way in a stored text: a range of lines, a search with the lines around, a JSON path.

What :func:`~toolctx.compaction.read_context` answers besides a page of characters,
and what a handle passed as an argument (``ctx:<id>#lines=10-40``) selects: both cut
with the same :func:`line_span` and :func:`value_at`. Each ``read_context`` answer is
the stored (redacted) text itself, cut to at most ``limit`` characters, under a header
that says what it is and how to read on; a query it cannot answer comes back as a
message the model can act on, never an exception. :func:`output_text` is a tool
result as the text a model reads.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from toolctx._serialize import encode

__all__ = ["NavigationError", "by_lines", "by_path", "by_search", "line_span", "output_text", "value_at"]

_LINES = re.compile(r"\s*(\d+)\s*(?:-\s*(\d*)\s*)?")
_STEP = re.compile(r"""\.?([A-Za-z_][\w-]*)|\.?(\d+)|\[\s*(-?\d+)\s*\]|\[\s*("(?:[^"\\]|\\.)*"|'[^']*')\s*\]""")
_MAX_CONTEXT = 20
_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})


class NavigationError(ValueError):
    """A range of lines or a JSON path that does not select anything in a text; its message says why."""


def output_text(result: Any) -> str:
    """A tool result as the text a model reads: strings as they are, anything else as JSON.

    The JSON is the one a stored call holds (toolctx's one encoding), so any value
    the session stores reads the same, in the fallback form if need be; never raises.
    """
    if isinstance(result, str):
        return result
    if _is_text_block(result) and isinstance(result.get("text"), str):
        return str(result["text"])  # one content block (what an MCP tool's text result becomes)
    if isinstance(result, list) and all(map(_is_text_block, result)):
        return "".join(str(b.get("text", "")) for b in result)  # chat content blocks (or the Responses API's)
    return encode(result)[0].decode()  # (the JSON the session stores; any value, the fallback form included)


def _is_text_block(value: Any) -> bool:
    kind = value.get("type") if isinstance(value, dict) else None
    return isinstance(kind, str) and kind in _TEXT_BLOCKS  # (a "type" of any other value, a list say, is data)


def line_span(text: str, ref: str, spec: str) -> tuple[list[str], int, int]:
    """The lines of ``text`` (with their ends) and the first and last (counted from 1, the last within the text)
    that ``spec`` names: ``"120-180"``, ``"120-"`` (to the end) or ``"120"``. NavigationError if it names none."""
    found = _LINES.fullmatch(spec) if isinstance(spec, str) else None
    if found is None:
        raise NavigationError(
            f'lines must be a line number or a range such as "120-180" (counted from 1), got {spec!r:.80}.'
        )
    lines = text.splitlines(keepends=True)
    first = int(found.group(1))
    last = len(lines) if found.group(2) in ("", None) and "-" in spec else int(found.group(2) or first)
    if first < 1 or last < first:
        raise NavigationError(f"lines {spec!r} is not a range of lines: give first-last with 1 <= first <= last.")
    if first > len(lines):
        raise NavigationError(f"line {first:,} is past the end of {ref}, which has {len(lines):,} lines.")
    return lines, first, min(last, len(lines))


def by_lines(text: str, ref: str, spec: str, limit: int) -> str:
    """Lines ``spec`` of ``text`` (``"120-180"``, ``"120-"``, ``"120"``; counted from 1), as they are."""
    try:
        lines, first, last = line_span(text, ref, spec)
    except NavigationError as exc:
        return str(exc)
    body, shown = "", first - 1
    while shown < last and len(body) + len(lines[shown]) <= limit:
        body += lines[shown]
        shown += 1
    if shown == first - 1:  # (one line longer than limit: its start)
        line = lines[shown]
        header = f"[{ref} line {first:,} of {len(lines):,}: its first {limit:,} characters of {len(line):,}.]"
        return f"{header}\n{line[:limit]}"
    more = f' Continue with lines="{shown + 1}-{last}".' if shown < last else ""
    return f"[{ref} lines {first:,}-{shown:,} of {len(lines):,}.{more}]\n{body}"


def by_search(text: str, ref: str, pattern: str, regex: bool, context: int, limit: int) -> str:
    """The lines of ``text`` that hold ``pattern`` (plain text, or a regular expression with ``regex``), each with
    ``context`` lines around, numbered as ``grep -n`` numbers them (``12:`` a match, ``11-`` around it)."""
    if not isinstance(pattern, str) or not pattern:
        return "search needs the text (or, with regex=true, the regular expression) to look for."
    try:
        compiled = re.compile(pattern if regex else re.escape(pattern))
    except re.error as exc:
        return f"search {pattern!r:.80} is not a valid regular expression ({exc}); regex=false looks for it as it is."
    if not isinstance(context, int) or isinstance(context, bool) or not 0 <= context <= _MAX_CONTEXT:
        return f"context must be a number of lines from 0 to {_MAX_CONTEXT}, got {context!r:.40}."
    lines = text.splitlines()
    hits = [n for n, line in enumerate(lines) if compiled.search(line)]
    if not hits:
        return f"No line of {ref} holds {pattern!r:.200} ({len(lines):,} lines)."
    groups: list[list[int]] = []
    for n in hits:
        start, end = max(0, n - context), min(len(lines) - 1, n + context)
        if groups and start <= groups[-1][1] + 1:
            groups[-1][1] = end
        else:
            groups.append([start, end])
    matched, body, listed, size = set(hits), list[str](), 0, 0
    for start, end in groups:
        block = "\n".join(f"{n + 1}{':' if n in matched else '-'}{lines[n]}" for n in range(start, end + 1))
        if body and size + len(block) + 3 > limit:
            break
        body.append(block[:limit])
        size += len(body[-1]) + 3
        listed += sum(1 for n in range(start, end + 1) if n in matched)
    more = f" Showing the first {listed:,}; narrow the search, or read on with lines=." if listed < len(hits) else ""
    what = "regular expression" if regex else "text"
    return (
        f"[{ref} search for the {what} {pattern!r:.200}: {len(hits):,} matching lines of {len(lines):,}.{more}]\n"
        + ("\n--\n".join(body))
    )


def by_path(text: str, ref: str, path: str, offset: int, limit: int) -> str:
    """The value at ``path`` (``$.items[2].name``, or ``items.2.name``) of a JSON ``text``, as JSON, from ``offset``
    for ``limit`` characters."""
    try:
        value, where = value_at(text, ref, path)
    except NavigationError as exc:
        return str(exc)
    shown = value if isinstance(value, str) else orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    if offset >= len(shown) and not (offset == 0 and not shown):
        return f"offset {offset:,} is past the end of {where} of {ref}, which has {len(shown):,} characters."
    end = min(len(shown), offset + limit)
    more = f" {len(shown) - end:,} more characters follow; continue with offset={end}." if end < len(shown) else ""
    kind = "a string" if isinstance(value, str) else "JSON"
    return f"[{ref} {where}, {kind} of {len(shown):,} characters: {offset:,}-{end:,}.{more}]\n{shown[offset:end]}"


def value_at(text: str, ref: str, path: str) -> tuple[Any, str]:
    """The value at ``path`` (``$.items[2].name``, or ``items.2.name``) of a JSON ``text``, and where it is (as
    ``$['items'][2]['name']``). NavigationError if ``text`` is not JSON or has nothing there."""
    if not isinstance(path, str):
        raise NavigationError(f'path must be a JSON path such as "$.items[0].name", got {path!r:.80}.')
    try:
        value: Any = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise NavigationError(
            f"{ref} is not JSON, so it has no path {path!r:.80}; use search or lines instead."
        ) from None
    steps, at, where = path.strip(), 0, "$"
    if steps.startswith("$"):
        at = 1
    while at < len(steps):
        step = _STEP.match(steps, at)
        if step is None or step.end() == at:
            raise NavigationError(
                f'path {path!r:.80} cannot be read at {steps[at:]!r:.40}: use .name, [index] or ["name"] steps.'
            )
        at = step.end()
        name, number, index, quoted = step.groups()
        key: str | int = (
            name if name is not None else int(number or index) if quoted is None else orjson.loads(_json_string(quoted))
        )
        if isinstance(value, dict):
            if str(key) not in value:
                keys = ", ".join(map(repr, list(value)[:20]))
                raise NavigationError(f"{where} of {ref} has no key {str(key)!r:.80}; its keys: {keys}.")
            value, where = value[str(key)], f"{where}[{str(key)!r}]"
        elif isinstance(value, list) and isinstance(key, int):
            if not -len(value) <= key < len(value):
                raise NavigationError(f"{where} of {ref} has {len(value):,} items: index {key} is past its end.")
            value, where = value[key], f"{where}[{key}]"
        else:
            raise NavigationError(f"{where} of {ref} is {_kind(value)}: it has no {key!r:.80}.")
    return value, where


def _json_string(quoted: str) -> bytes:
    """A quoted path step as a JSON string (single quotes allowed, nothing escaped inside them)."""
    return quoted.encode() if quoted.startswith('"') else orjson.dumps(quoted[1:-1])


def _kind(value: Any) -> str:
    """What a JSON value is, in words."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else "a number"
