"""How a value is read in text after a key's operator, and the words that are no value: shared by ``_keys``
(``KEY = value``) and ``_unpacking`` (``user, password = "ada", "..."``)."""

from __future__ import annotations

import re

__all__ = ["DOTTED_NAME", "ESCAPED_CHAR", "NAME", "NOT_SECRET", "VALUE", "WORDY", "line_start", "unescaped"]

# A character escaped as ``\uXXXX`` (JSON written ASCII-only, as Python's json.dumps does) is part of a quoted value.
ESCAPED_CHAR = rb"\\{1,4}u[0-9a-fA-F]{4}"
_ESCAPE = re.compile(rb"\\{1,4}u([0-9a-fA-F]{4})")
VALUE = (  # a string literal's prefix (``b'...'``, ``r"..."``) is not part of its value
    rb"(?:\[(?P<list>[^\[\]{}\r\n]++)\]|(?:[bBrRuUfF]{1,2}(?=[\"']))?+\\{0,4}\"(?P<dq>(?:[^\"\\\r\n]|"
    + ESCAPED_CHAR
    + rb")++)|(?:[bBrRuUfF]{1,2}(?=[\"']))?+\\{0,4}'(?P<sq>(?:[^'\\\r\n]|"
    + ESCAPED_CHAR
    + rb")++)|`(?P<bq>[^`\\\r\n]++)|(?P<bare>[^\s\"'`,;&<>()\[\]{}\\]++))"
)
# a type, a literal or a keyword: ``token: str``, ``password = None``, ``token = await f()``
NOT_SECRET = frozenset(
    b"none null nil true false undefined str string bytes int integer bool boolean float number any object "
    b"optional required secretstr continue function nonlocal await lambda yield new typeof".split()
)
NAME = re.compile(rb"[$@]?[A-Za-z_][A-Za-z0-9_\-]*")
DOTTED_NAME = re.compile(rb"[$@]?[A-Za-z_]{1,32}(?:\.[A-Za-z_]{1,32})++")
WORDY = re.compile(rb"[A-Za-z0-9\x80-\xff]")  # (a value with none of these is punctuation, or masked: ``****``)


def unescaped(value: bytes) -> bytes:
    """``value`` with its ``\\uXXXX`` escapes as the characters they stand for (UTF-8; a lone surrogate as ``?``)."""
    return _ESCAPE.sub(lambda m: chr(int(m[1], 16)).encode("utf-8", "replace"), value)


def line_start(data: bytes, at: int) -> int:
    """Where the line holding ``at`` starts: after a newline, or after an escaped one (text inside JSON)."""
    escaped = data.rfind(b"\\n", 0, at)
    return max(data.rfind(b"\n", 0, at) + 1, escaped + 2 if escaped >= 0 else 0)
