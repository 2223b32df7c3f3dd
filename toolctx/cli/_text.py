"""Stored text made safe to print: control characters and direction overrides shown as escapes.

Arguments, results, error messages, tool names and memory items come from tools and
models, not from the person at the terminal: printed raw, ``"\\x1b]0;pwned\\x07"``
would retitle their terminal and ``"\\x1b[2J"`` clear it, and U+202E would print the
rest of a line backwards. Every string the command prints that it did not write
itself goes through :func:`visible` first, and reaches Rich as plain text (never as
markup).
"""

from __future__ import annotations

import re

from rich.text import Text

__all__ = ["plain", "visible", "visible_json"]

# C0 controls, DEL and C1 controls; lone surrogates (unprintable: writing them raises);
# the marks and overrides that reorder text (Trojan Source); the line and paragraph
# separators some terminals break lines at.
_DIRECTION = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f\ud800-\udfff{_DIRECTION}]")
_UNSAFE_KEEPING_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff{_DIRECTION}]")
# What JSON may carry raw but a terminal acts on: C1 controls, DEL and the direction marks.
_UNSAFE_IN_JSON = re.compile(f"[\x7f-\x9f{_DIRECTION}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object, *, lines: bool = False) -> str:
    """``text`` with every control character, DEL and direction override written as an escape (``\\x1b``, ``\\u202e``).

    With ``lines=True`` newlines and tabs are kept (a multi-line view); otherwise they
    are escaped too, so one stored value stays on one line. Backslashes are left as
    they are: ``\\x1b`` on screen may be an escaped ESC or those four characters.
    """
    value = text if isinstance(text, str) else str(text)
    pattern = _UNSAFE_KEEPING_LINES if lines else _UNSAFE
    return value if pattern.search(value) is None else pattern.sub(_escape, value)


def plain(text: object, *, lines: bool = False, style: str = "") -> Text:
    """``text`` made :func:`visible`, as a Rich :class:`~rich.text.Text`: printed as it is, never read as markup."""
    return Text(visible(text, lines=lines), style=style)


def visible_json(encoded: str) -> str:
    """JSON text with the characters a terminal acts on written as ``\\uXXXX`` escapes: the same JSON value.

    JSON already escapes C0 controls; C1 controls, DEL and the direction overrides are
    legal raw inside its strings, and only there can they occur.
    """
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m[0]):04x}", encoded)
