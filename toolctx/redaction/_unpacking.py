"""Assignments that unpack a tuple: ``user, password = "ada", "..."`` gives ``password`` the second value.

A key among the targets of such an assignment is found by ``_keys`` (the key's own rule
when it is the last target, :data:`TAIL` after it when names follow it); this module pairs
the key with the value at its place, which ``_keys`` then judges as any key's value. It
pairs only a statement it reads whole: targets at the start of a line, ``=`` or ``:=``
with a space on each side, then as many values as targets, each a literal or a name, up
to the statement's end. Anything else (a call's arguments, a log line's ``key=value``
pairs, a value list that goes on) is left to the key's own rule.
"""

from __future__ import annotations

import re

from toolctx.redaction._syntax import VALUE

__all__ = ["SCREEN_TARGETS", "TAIL", "declared", "unpacked_value"]

_SPACE = rb"(?:[ \t]|\\{1,4}t)"  # (a tab in JSON text, escaped once or more: ``\t``)
# The targets after the key (in the key's rule, as group ``tail``), and in its screen (no possessive quantifiers).
TAIL = rb"(?P<tail>(?:(?:," + _SPACE + rb"*+[$@]?[A-Za-z_][\w.]*+" + _SPACE + rb"*+)++[)\]]?+|[)\]])[ \t]{0,8}+)"
SCREEN_TARGETS = (
    rb"(?:" + _SPACE + rb"*," + _SPACE + rb"*[$@]?[A-Za-z_][A-Za-z0-9_.]*)+" + _SPACE + rb"*[)\]]?[ \t]*:?=[ \t]"
    rb"|[ \t]*[)\]][ \t]*:?=[ \t]"
)
# the targets before the key (searched up to it; a name starts after no backslash: ``\tuser`` is a tab, then ``user``)
_TARGETS = re.compile(rb"(?<!\\)(?:[$@]?[A-Za-z_][\w.]*+" + _SPACE + rb"*+," + _SPACE + rb"*+)++[$@]?$")
# what may stand before a statement's targets on their line: indentation, a prompt, a diff's or grep's prefix
_STATEMENT_START = re.compile(
    rb"(?:[ \t]|\\{1,4}t)*+(?:(?:>>>|\.\.\.|[+-]|[\w./-]*?[:-][0-9]++[:-]|[0-9]++[:-])[ \t]*+)?+"
    rb"(?:(?:let|var|const|val|my)[ \t]++)?+"
)
_ITEM = re.compile(rb"[ \t]*+(?:" + VALUE + rb")(?:\\{0,4}[\"'`])?+[ \t]*+")  # one value, its closing quote
_GAP = re.compile(rb"(?:[ \t]|\\{1,4}t)*+")
_END = re.compile(rb"[ \t]*+(?:$|[\r\n;#\"]|//|\\{1,4}[nr\"])")  # a statement's end (a line's, escaped in JSON too)
_SPACE_AFTER = re.compile(rb"[ \t]|\\{1,4}t")
_LOOK_BACK = 512  # bytes before a key in which its statement starts, at most


def unpacked_value(
    match: re.Match[bytes], data: bytes, begin: int, replacement: bytes
) -> tuple[str, int, int] | tuple[()] | None:
    """For a key's assignment ``match`` (the key starting at ``begin``) among the targets of an assignment that
    unpacks a tuple (``user, password = "ada", "x"``): the kind (as ``_syntax.VALUE`` names it) and span of
    the value at the key's place; ``()`` if the key is no last target and the statement is not read whole
    (``def f(password, user=None)``), or the value at its place is a call (``user, password = ada, getpass()``):
    nothing there to judge; None if the key is the last target of no such statement (``cookie, token = args``):
    judged by its own value. A list holding only ``replacement`` is a value (redacted already)."""
    tail = match["tail"] if "tail" in match.re.groupindex else b""
    after = tail.count(b",")
    closed = tail.rstrip()[-1:] in (b")", b"]")
    unpaired = () if after or closed else None
    op = match.start("op")
    at = match.end("op") + (match["op"] == b":")  # (``:=``)
    if data[op:at] not in (b"=", b":=") or not _spaced(data, op - 1) or _SPACE_AFTER.match(data, at) is None:
        return unpaired  # not ``==``, ``=>``, ``:`` nor ``key=value``
    key = begin - (data[begin - 1 : begin] in (b"$", b"@"))  # (a sigil: ``$password``)
    floor = max(0, key - _LOOK_BACK)
    newline, escaped = data.rfind(b"\n", floor, key), data.rfind(b"\\n", floor, key)
    if newline < 0 and escaped < 0 and floor:
        return unpaired  # (no line start within reach: a long line, no statement's start)
    line = max(newline + 1, escaped + 2 if escaped >= 0 else 0)
    targets = _TARGETS.search(data, max(line, key - 256), key + 1 if key < begin else begin)
    if targets is None and not after:
        return unpaired
    first = key if targets is None else targets.start()
    lead = data[line:first] if first - line <= 64 else b"-"  # (``-``: no statement's start)
    quote = lead.rfind(b'"')  # (a JSON string's start: ``{"stdout": "user, password = ...``)
    if quote >= 0 and lead[quote - 1 : quote] != b"\\" and lead[:quote].rstrip().endswith((b":", b"[", b",", b"{")):
        lead = lead[quote + 1 :]
    opened = lead.rstrip(b" \t")[-1:] in (b"(", b"[")
    if opened:  # (what stands before the bracket)
        lead = lead.rstrip(b" \t")[:-1]
    if (closed and not opened) or _STATEMENT_START.fullmatch(lead) is None:
        return unpaired
    at = _GAP.match(data, at).end()  # type: ignore[union-attr]
    index = 0 if targets is None else targets.group().count(b",")
    wanted = index + 1 + after
    paired = None
    if data[at : at + 1] in (b"(", b"["):  # the values in brackets, or a list first
        paired = _values(data, at + 1, index, wanted, replacement, True)
    if paired is None:
        paired = _values(data, at, index, wanted, replacement, False)
    return unpaired if paired is None else paired


def _values(
    data: bytes, at: int, index: int, wanted: int, replacement: bytes, bracket: bool
) -> tuple[str, int, int] | tuple[()] | None:
    """The value at ``index`` of ``wanted`` values from ``at`` to the statement's end (closing a ``bracket``);
    ``()`` if a call stands there; None if the values are not ``wanted`` literals or names."""
    values: list[tuple[str, int, int]] = []
    redacted = b"[" + replacement + b"]"
    while True:
        item = _ITEM.match(data, at)
        start = _GAP.match(data, at).end()  # type: ignore[union-attr]
        if data.startswith(redacted, start):  # (a list redacted already)
            values.append(("list", start + 1, start + len(redacted) - 1))
            at = _GAP.match(data, start + len(redacted)).end()  # type: ignore[union-attr]
        elif item is not None:
            kind = item.lastgroup or "bare"
            if kind == "bare" and (b"=" in item.group(kind) or item.group(kind)[:1] == b"*"):
                return None  # arguments by keyword or unpacked: ``login(user, password=x, **kw)``
            values.append((kind, *item.span(kind)))
            at = item.end()
        else:
            return None
        if data[at : at + 1] == b"(" and len(values) == index + 1:
            return ()  # a call at the key's place: ``user, password = ada, getpass()``
        if data[at : at + 1] != b",":
            break
        at += 1
    if bracket:
        if data[at : at + 1] not in (b")", b"]"):
            return None
        at += 1
    if len(values) != wanted or _END.match(data, at) is None:
        return None
    return values[index]


def _spaced(data: bytes, at: int) -> bool:
    """Whether a space or a tab (escaped in JSON or not) ends at ``at``."""
    return data[at : at + 1] in (b" ", b"\t") or (data[at : at + 1] == b"t" and data[at - 1 : at] == b"\\")


_DECLARED = re.compile(rb"(?:^|[ \t])(?:let|var|const)[ \t]++[$@]?[A-Za-z_][^()\[\]=]*+$")


def declared(data: bytes, begin: int) -> bool:
    """Whether the key starting at ``begin`` is declared by ``let``, ``var`` or ``const`` on its line, with no
    bracket: JavaScript declares each name apart (``var user, password = "x", port``), not a tuple."""
    floor = max(0, begin - _LOOK_BACK)
    line = max(data.rfind(b"\n", floor, begin) + 1, floor)
    return _DECLARED.search(data, line, begin) is not None
