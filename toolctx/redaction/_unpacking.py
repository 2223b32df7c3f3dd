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

from toolctx.redaction._syntax import VALUE, line_start

__all__ = ["SCREEN_TARGETS", "TAIL", "unpacked_value"]

_SPACE = rb"(?:[ \t]|\\{1,4}t)"  # (a tab in JSON text, escaped once or more: ``\t``)
# The targets after the key (in the key's rule, as group ``tail``), and in its screen (no possessive quantifiers).
TAIL = rb"(?P<tail>(?:(?:," + _SPACE + rb"*+[$@]?[A-Za-z_][\w.]*+" + _SPACE + rb"*+)++[)\]]?+|[)\]])[ \t]{0,8}+)"
SCREEN_TARGETS = (
    rb"(?:" + _SPACE + rb"*," + _SPACE + rb"*[$@]?[A-Za-z_][A-Za-z0-9_.]*)+" + _SPACE + rb"*[)\]]?[ \t]*:?=[ \t]"
    rb"|[ \t]*[)\]][ \t]*:?=[ \t]"
)
_TARGETS = re.compile(rb"(?:[$@]?[A-Za-z_][\w.]*+" + _SPACE + rb"*+," + _SPACE + rb"*+)++[$@]?$")  # (up to the key)
# what may stand before a statement's targets on their line: indentation, a prompt, a diff's or grep's prefix
_STATEMENT_START = re.compile(
    rb"[ \t]*+(?:(?:>>>|\.\.\.|[+-]|[\w./-]*+:[0-9]++[:-]|[0-9]++[:-])[ \t]*+)?+(?:(?:let|var|const|val|my)[ \t]++)?+"
)
_ITEM = re.compile(rb"[ \t]*+(?:" + VALUE + rb")(?:\\{0,4}[\"'`])?+[ \t]*+")  # one value, its closing quote
_END = re.compile(rb"[ \t]*+(?:$|[\r\n;#\"]|//|\\{1,4}[nr\"])")  # a statement's end (a line's, escaped in JSON too)


def unpacked_value(match: re.Match[bytes], data: bytes, begin: int) -> tuple[str, int, int] | tuple[()] | None:
    """For a key's assignment ``match`` (the key starting at ``begin``) among the targets of an assignment that
    unpacks a tuple (``user, password = "ada", "x"``): the kind (as ``_syntax.VALUE`` names it) and span of
    the value at the key's place; ``()`` if names after the key or a bracket closed after it make it no such
    statement, or the value at its place is a call (``user, password = ada, getpass()``): nothing to judge;
    None if the key is no such target, or the last one of a statement not paired (``cookie, token = args``):
    then judged as any key's."""
    tail = match["tail"] if "tail" in match.re.groupindex else b""
    after = tail.count(b",")
    closed = tail.rstrip()[-1:] in (b")", b"]")
    unpaired = () if after or closed else None
    line = line_start(data, begin)
    key = begin - (data[begin - 1 : begin] in (b"$", b"@"))  # (a sigil: ``$password``)
    targets = _TARGETS.search(data, max(line, key - 256), key + 1 if key < begin else begin)
    first = key if targets is None else targets.start()
    lead = data[line:first] if first - line <= 64 else b"-"  # (``-``: no statement's start)
    opened = lead.rstrip(b" \t")[-1:] in (b"(", b"[")
    if opened:  # (what stands before the bracket)
        lead = lead.rstrip(b" \t")[:-1]
    op = match.start("op")
    at = match.end("op") + (match["op"] == b":")  # (``:=``)
    if (
        not (targets is not None or after)
        or data[op : at + 1] not in (b"= ", b"=\t", b":= ", b":=\t")  # not ``==``, ``=>``, ``:`` nor ``key=value``
        or data[op - 1 : op] not in (b" ", b"\t")
        or (closed and not opened)
        or _STATEMENT_START.fullmatch(lead) is None
    ):
        return unpaired
    index = 0 if targets is None else targets.group().count(b",")
    at = _ITEM_START.match(data, at).end()  # type: ignore[union-attr]
    bracket = data[at : at + 1] in (b"(", b"[")
    at += bracket
    values: list[tuple[str, int, int]] = []
    while (item := _ITEM.match(data, at)) is not None:
        kind = item.lastgroup or "bare"
        if kind == "bare" and (b"=" in item.group(kind) or item.group(kind)[:1] == b"*"):
            return unpaired  # arguments by keyword or unpacked: ``login(user, password=x, **kw)``
        values.append((kind, *item.span(kind)))
        at = item.end()
        if data[at : at + 1] == b"(" and len(values) == index + 1:
            return ()  # a call at the key's place: ``user, password = ada, getpass()``
        if data[at : at + 1] != b",":
            break
        at += 1
    if bracket:
        if data[at : at + 1] not in (b")", b"]"):
            return unpaired
        at += 1
    if len(values) != index + 1 + after or _END.match(data, at) is None:
        return unpaired
    return values[index]


_ITEM_START = re.compile(rb"[ \t]*+")
