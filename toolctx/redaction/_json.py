"""JSON that redaction edits without parsing it: ``bytes`` values and large strings.

A ``bytes`` value is stored as ``{"$bytes": base64}`` (:data:`BLOB_HEAD` opens a whole
result that is one); :func:`from_base64` reads it back only when it is the base64 toolctx
writes. A large result that is one string is redacted on its text's bytes
(:func:`string_text`) and the replacements are put straight into the JSON
(:func:`replace_in_string`), so no ``str`` of it is ever built.
"""

from __future__ import annotations

import binascii
import codecs
from collections.abc import Sequence

__all__ = ["BLOB_HEAD", "from_base64", "replace_in_string", "string_text"]

BLOB_HEAD = b'{"$bytes":"'
"""How the JSON of a whole result that is ``bytes`` begins."""
_JSON_LONGER = bytes(1 if b in b'"\\\b\t\n\f\r' else 0 for b in range(256))


def from_base64(text: str | memoryview) -> bytes | None:
    """The bytes a ``{"$bytes": ...}`` value holds, or None if ``text`` is not the base64 toolctx writes."""
    try:
        raw = binascii.a2b_base64(text)  # lenient (faster): an exact length shows nothing was skipped
    except (binascii.Error, ValueError):
        return None
    return raw if len(text) == (len(raw) + 2) // 3 * 4 else None


def string_text(data: bytes) -> bytes | None:
    """The UTF-8 of the text JSON string ``data`` holds, or None when orjson would not have written it so.

    orjson escapes only ``"``, ``\\`` and control characters; without a ``\\u00XX`` (a
    rare control character) each of its escapes is one of Python's, so ``escape_decode``
    gives the text's UTF-8 at once.
    """
    if _escaped(data, b"\\u") or _escaped(data, b"\\/"):
        return None
    return codecs.escape_decode(memoryview(data)[1:-1])[0]


def replace_in_string(data: bytes, raw: bytes, spans: Sequence[tuple[int, int]], replacement: bytes) -> bytes:
    """JSON string ``data`` with the sorted, disjoint ``spans`` of its text ``raw`` replaced by JSON ``replacement``.

    Each offset is moved by the escapes before it: exactly what orjson would write for
    the redacted text.
    """
    view = memoryview(data)
    longer = raw.translate(_JSON_LONGER)  # 1 where the JSON writes the byte as two
    parts: list[bytes | memoryview] = []
    text_at, json_at, kept = 0, 1, 0
    for start, end in spans:
        json_start = json_at + start - text_at + longer.count(1, text_at, start)
        json_end = json_start + end - start + longer.count(1, start, end)
        parts += (view[kept:json_start], replacement)
        text_at = end
        json_at = kept = json_end
    parts.append(view[kept:])
    return b"".join(parts)


def _escaped(data: bytes, escape: bytes, most: int = 4096) -> bool:
    """Whether JSON ``data`` holds ``escape`` (``\\u``, say) as an escape, not after an escaped backslash.

    Past ``most`` look-alikes it answers yes: the caller then takes its general path.
    """
    at = data.find(escape)
    while at >= 0 and most:
        run = at
        while run and data[run - 1] == 0x5C:  # backslashes just before it
            run -= 1
        if (at - run) % 2 == 0:
            return True
        at = data.find(escape, at + 2)
        most -= 1
    return at >= 0
