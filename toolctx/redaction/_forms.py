"""What redaction does with the bytes of a text, whatever the rule that matched.

Rules match UTF-8 bytes; these helpers give them the text in the form they read it
in and put the replacement back: :class:`Lowered` lowers ASCII letters (all of the
data, or only around the few places a rule is tried), :class:`Folded` reads runs of
full-width forms (as UTF-8 or as JSON escapes) as the ASCII they stand for and maps
spans found in that reading back to the input, and :func:`splice` replaces spans,
widened to whole characters and merged where they overlap or touch.
"""

from __future__ import annotations

import bisect
import codecs
import re
from collections.abc import Iterable

__all__ = ["FULL_WIDTH", "Folded", "Lowered", "splice", "whole_spans"]

FULL_WIDTH = {**{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}, 0x3000: 0x20}
"""``str.translate`` table from the full-width forms of ASCII (U+FF01-U+FF5E, U+3000) to ASCII."""
INVISIBLE = dict.fromkeys((0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x00AD))
"""``str.translate`` table deleting the characters that show as nothing (zero-width spaces and joiners, the
word joiner, the byte order mark, the soft hyphen): ``pass\u200bword`` reads ``password``."""
# What reads as another character, or as none: a full-width form as UTF-8 or as a JSON escape (``json.dumps``
# writes ``\uff50``), an invisible character (as UTF-8 or escaped), or a JSON escape of an ASCII letter, digit
# or one of ``+-./:=@_`` (``\u0068unter2``), never of a quote or a backslash, which would change what is quoted.
_ESCAPED_ASCII_CODE = rb"00(?:2[bdefBDEF]|3[0-9aAdD]|4[0-9a-fA-F]|5[0-9aAfF]|6[1-9a-fA-F]|7[0-9aA])"  # (after ``\\u``)
_ESCAPED_ASCII = rb"\\\\?u" + _ESCAPED_ASCII_CODE
_INVISIBLE_ESCAPED = rb"200[bBcCdD]|2060|[fF][eE][fF][fF]|00[aA][dD]"  # (after ``\\u``)
_INVISIBLE = rb"\xe2(?:\x80[\x8b-\x8d]|\x81\xa0)|\xef\xbb\xbf|\xc2\xad|\\\\?u(?:" + _INVISIBLE_ESCAPED + b")"
_WIDE = (
    rb"(?:\xef(?:\xbc[\x81-\xbf]|\xbd[\x80-\x9e])|\xe3\x80\x80"
    rb"|\\\\?u(?:[fF]{2}(?:0[1-9a-fA-F]|[1-4][0-9a-fA-F]|5[0-9a-eA-E])|3000)|"
    + _ESCAPED_ASCII
    + b"|"
    + _INVISIBLE
    + b")"
)
_WIDE_ONE = re.compile(_WIDE)
_WIDE_RUN = re.compile(_WIDE + b"++")
# A run holding one of these is read: ０-９, Ａ-Ｚ, ａ-ｚ (UTF-8, escaped), escaped ASCII, invisibles. Each regex
# starts with one literal byte, so ``re`` skips to it at memory speed (an alternation of several is far slower).
_WIDE_ALNUM = (
    re.compile(rb"\xef(?:\xbc[\x90-\x99\xa1-\xba]|\xbd[\x81-\x9a]|\xbb\xbf)"),
    re.compile(
        rb"\\\\?u(?:[fF]{2}(?:1[0-9]|2[1-9a-fA-F]|3[0-9aA]|4[1-9a-fA-F]|5[0-9aA])|"
        + _ESCAPED_ASCII_CODE
        + b"|"
        + _INVISIBLE_ESCAPED
        + b")"
    ),
    re.compile(rb"\xe2(?:\x80[\x8b-\x8d]|\x81\xa0)"),
    re.compile(rb"\xc2\xad"),
)
_READ = {**FULL_WIDTH, **{c: c for c in range(0x21, 0x7F)}, **INVISIBLE}


def _wide_before(data: bytes, end: int) -> int:
    """The length of the full-width form that ends at ``end`` (0 if none)."""
    for width in (2, 3, 7, 6):  # (an escape is 7 bytes in JSON held in a string: ``\\\\u0068``)
        if end >= width and _WIDE_ONE.fullmatch(data, end - width, end) is not None:
            return width
    return 0


class Folded:
    """``data`` as it reads: runs of full-width forms that hold a letter or digit as ASCII, JSON escapes of
    ASCII letters and digits as those, and invisible characters as nothing.

    ``ｐａｓｓｗｏｒｄ：hunter2`` reads ``password:hunter2``, and so do the JSON escapes
    ``\\uff50\\uff41...``, ``\\u0070assword`` and ``pass\\u200bword``: :attr:`data` is that
    reading, and :meth:`original` maps spans found in it back to the input.
    """

    def __init__(self, data: bytes, *, text: bool = True) -> None:
        self._input = data
        found: list[tuple[int, int]] = []
        for seeds in _WIDE_ALNUM:
            at = 0
            while (seed := seeds.search(data, at)) is not None:
                start = seed.start()
                while width := _wide_before(data, start):
                    start -= width
                at = _WIDE_RUN.match(data, seed.start()).end()  # type: ignore[union-attr]
                # In bytes that need not be text, a run counts where the bytes around it are UTF-8.
                if text or _utf8_around(data, start, at):
                    found.append((start, at))
        self._found = _merge(found)
        # (start in output, start in input, length, bytes of input per character or where each one starts)
        self._runs: list[tuple[int, int, int, list[int] | int]] = []
        self._starts: list[int] = []
        self._data: bytes | None = None if self._found else data

    def __bool__(self) -> bool:
        return bool(self._found)

    @property
    def data(self) -> bytes:
        if self._data is None:
            data, last, size = self._input, 0, 0
            parts: list[bytes] = []
            for start, end in self._found:
                forms = data[start:end]
                places: list[int] | int
                text = None if b"\\" in forms else forms.decode("utf-8", "replace")
                if text is not None and all(ord(c) in FULL_WIDTH for c in text):  # all full-width: 3 bytes each
                    run, places = text.translate(FULL_WIDTH).encode(), 3
                else:  # one by one: escapes are 6 bytes, and invisible characters read as none
                    read = [(_READ[_code(m.group())], m.start()) for m in _WIDE_ONE.finditer(data, start, end)]
                    run = bytes(code for code, _ in read if code is not None)
                    places = [at for code, at in read if code is not None] + [end]
                parts += (data[last:start], run)
                size += start - last
                self._runs.append((size, start, len(run), places))
                size += len(run)
                last = end
            parts.append(data[last:])
            self._data = b"".join(parts)
            self._starts = [run[0] for run in self._runs]
        return self._data

    def _place(self, at: int) -> int:
        k = bisect.bisect_right(self._starts, at) - 1
        if k < 0:
            return at
        out, start, length, places = self._runs[k]
        if at - out <= length:  # inside the run (or at its end)
            return start + (at - out) * places if isinstance(places, int) else places[at - out]
        end = start + length * places if isinstance(places, int) else places[-1]
        return end + at - out - length

    def original(self, spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """``spans`` of :attr:`data` as spans of the input."""
        return [(self._place(s), self._place(e)) for s, e in spans]


def _utf8_around(data: bytes, start: int, end: int) -> bool:
    low, high = max(0, start - 16), min(len(data), end + 16)
    while low < start and 0x80 <= data[low] < 0xC0:  # begin on a character
        low += 1
    try:
        codecs.utf_8_decode(data[low:high], "strict", False)  # not final: a cut last character is fine
    except UnicodeDecodeError:
        return False
    return True


def _code(form: bytes) -> int:
    return int(form.lstrip(b"\\")[1:], 16) if form.startswith(b"\\") else ord(form.decode())


class Lowered:
    """``data`` with its ASCII letters lowered (offsets unchanged): all of it, or only where asked."""

    _AROUND = 512  # most matches are shorter; one that reaches the end is matched again on all of it

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._all: bytes | None = None
        self._some: bytearray | None = None
        self._budget = len(data) // 2

    def whole(self) -> bytes:
        if self._all is None:
            self._all = self.data.lower()
        return self._all

    def match(self, regex: re.Pattern[bytes], at: int) -> re.Match[bytes] | None:
        """``regex.match`` at ``at`` in the lowered data, lowering only the few KiB around it if it can."""
        if self._all is not None:
            return regex.match(self._all, at)
        low, high = max(0, at - 64), min(len(self.data), at + self._AROUND)
        self._budget -= high - low
        if self._budget < 0:  # lowering so many places costs more than lowering it all
            return regex.match(self.whole(), at)
        if self._some is None:
            self._some = bytearray(self.data)
        self._some[low:high] = self._some[low:high].lower()
        match = regex.match(self._some, at)
        if match is not None and match.end() >= high < len(self.data):
            return regex.match(self.whole(), at)  # it may go on past what was lowered
        return match


def _merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _whole_characters(data: bytes, start: int, end: int) -> tuple[int, int]:
    # A bounded match may stop inside a UTF-8 sequence: widen it to whole characters.
    while start > 0 and 0x80 <= data[start] < 0xC0:
        start -= 1
    while end < len(data) and 0x80 <= data[end] < 0xC0:
        end += 1
    return start, end


def whole_spans(data: bytes, spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` of UTF-8 ``data`` widened to whole characters, sorted, and merged where they overlap or touch."""
    return _merge(_whole_characters(data, s, e) for s, e in spans)


def splice(data: bytes, spans: Iterable[tuple[int, int]], replacement: bytes) -> bytes:
    """``data`` with each span (merged where they overlap or touch) replaced by ``replacement``."""
    parts: list[bytes] = []
    last = 0
    for start, end in whole_spans(data, spans):
        parts += (data[last:start], replacement)
        last = end
    parts.append(data[last:])
    return b"".join(parts)
