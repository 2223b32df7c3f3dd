"""Where the characters of a long string result lie in its stored document, so a page of it is one ranged read."""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["SPANS_FROM", "Spans", "checked_spans", "result_spans"]

Spans = tuple[int, int, int, tuple[int, ...]]
"""Where a string result's characters lie in its stored document: the byte its JSON string's first character
starts at, its characters, the step, and the byte (from the first) of every step-th character and of the end."""
SPANS_FROM = 64 * 1024  # bytes of a string result's JSON from which its document is read by ranges
_STEPS = 64  # at most (a page read costs a step's bytes or two more than its own)


def result_spans(document: tuple[bytes, ...]) -> Spans | None:
    """The :data:`Spans` of a stored document (``Record.document``'s chunks) whose result is a long string, so a
    page of it is read with one ranged request; None for any other."""
    header, glue, result, _ = document
    if len(result) < SPANS_FROM or result[:1] != b'"':
        return None
    try:
        text = orjson.loads(result)
        step = max(4096, -(-len(text) // _STEPS))
        offsets, at = [0], 0
        for start in range(0, len(text), step):  # (JSON escapes each character alone: the parts add up)
            at += len(orjson.dumps(text[start : start + step])) - 2
            offsets.append(at)
    except (orjson.JSONDecodeError, TypeError):
        return None
    return len(header) + len(glue) + 1, len(text), step, tuple(offsets)


def checked_spans(value: Any) -> Spans | None:
    """Spans read from a manifest line, or None if they are not well formed (the document is then read whole)."""
    if not (isinstance(value, list) and len(value) == 4 and isinstance(value[3], list)):
        return None
    start, chars, step, offsets = value
    numbers = [start, chars, step, *offsets]
    if not all(type(n) is int and n >= 0 for n in numbers) or step < 1 or len(offsets) != -(-chars // step) + 1:
        return None
    return start, chars, step, tuple(offsets)
