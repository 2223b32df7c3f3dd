"""Assignments that unpack a tuple: ``user, password = "ada", "..."`` gives ``password`` the second value.

A key among the targets of such an assignment is found by ``_keys`` (the key's own rule
when it is the last target, :data:`TAIL` after it when names follow it); this module pairs
the key with the value at its place, and judges that value as a literal.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from toolctx.redaction._syntax import DOTTED_NAME, NAME, NOT_SECRET, VALUE, WORDY, line_start, unescaped

__all__ = ["SCREEN_TARGETS", "TAIL", "unpacked_span"]

# The targets after the key (in the key's rule, as group ``tail``), and in its screen (no possessive quantifiers).
TAIL = rb"(?P<tail>(?:(?:,[ \t]*+[A-Za-z_$][\w.$]*+[ \t]*+)++[)\]]?+|[)\]])[ \t]{0,8}+)"
SCREEN_TARGETS = rb"(?:[ \t]*,[ \t]*[A-Za-z_$][A-Za-z0-9_.$]*)+[ \t]*[)\]]?[ \t]*:?=|[ \t]*[)\]][ \t]*:?="
_TARGETS = re.compile(rb"(?:[A-Za-z_$][\w.$]*+[ \t]*+,[ \t]*+)++$")  # those before the key (searched up to it)
_OPERATOR_REST = re.compile(rb"[=>]?+[ \t]*+")
# what may stand before a statement's targets on their line: indentation, a prompt, a diff's or grep's prefix
_STATEMENT_START = re.compile(
    rb"[ \t]*+(?:(?:>>>|\.\.\.|[+-]|[\w./-]*+:[0-9]++[:-]|[0-9]++[:-])[ \t]*+)?+(?:(?:let|var|const|val|my)[ \t]++)?+"
)
_ITEM = re.compile(rb"[ \t]*+(?:" + VALUE + rb")(?:\\{0,4}[\"'`])?+[ \t]*+")  # one value, its closing quote


def unpacked_span(
    match: re.Match[bytes],
    data: bytes,
    begin: int,
    replacement: bytes,
    placeholder: Callable[[bytes], bool],
) -> tuple[int, int] | tuple[()] | None:
    """For a key's assignment ``match`` (the key starting at ``begin``): if the key is a target of an assignment
    that unpacks a tuple, the span of the value at its place if it may be a secret, else ``()``; None if the
    key is no such target (its value is judged as any key's)."""
    unpacked = _unpacked(match, data, begin)
    if not unpacked:
        return unpacked
    return _literal(data, unpacked, replacement, placeholder) or ()


def _unpacked(match: re.Match[bytes], data: bytes, begin: int) -> tuple[str, int, int] | tuple[()] | None:
    """For a key (starting at ``begin``) among the targets of an assignment that unpacks a tuple (``user, password
    = "ada", "x"``): the kind and span of the value at the key's place; ``()`` if names after the key or a
    bracket closed after it make it no such target, or one with no value at its place (``def f(password,
    user=None)``, ``def check(self, password):``); None if the key is no such target, or the last one with no
    value at its place (``cookie, token = args``): then judged as any key's."""
    tail = match["tail"] if "tail" in match.re.groupindex else b""
    after = tail.count(b",")
    closed = tail.rstrip()[-1:] in (b")", b"]")
    line = line_start(data, begin)
    targets = _TARGETS.search(data, max(line, begin - 256), begin)
    first = begin if targets is None else targets.start()
    lead = data[line:first] if first - line <= 64 else b"-"  # (``-``: no statement's start)
    opened = lead.rstrip(b" \t")[-1:] in (b"(", b"[")
    if opened:  # (what stands before the bracket)
        lead = lead.rstrip(b" \t")[:-1]
    at = match.end("op")
    statement = (
        (targets is not None or after)
        and (match["op"] == b"=") is (data[at : at + 1] != b"=")  # ``=`` or ``:=``, not ``==`` nor ``:``
        and (not closed or opened)
        and _STATEMENT_START.fullmatch(lead) is not None
    )
    if not statement:
        return () if after or closed else None
    at = _OPERATOR_REST.match(data, at).end()  # type: ignore[union-attr]
    at += opened and data[at : at + 1] in (b"(", b"[")
    index = 0 if targets is None else targets.group().count(b",")
    values: list[tuple[str, int, int]] = []
    while len(values) <= index and (item := _ITEM.match(data, at)) is not None:
        kind = item.lastgroup or "bare"
        if kind == "bare" and b"=" in item.group(kind):
            break  # arguments by keyword: ``login(user, password=x, retry=3)``
        values.append((kind, *item.span(kind)))
        at = item.end()
        if data[at : at + 1] != b",":
            break
        at += 1
    if len(values) <= index:
        return () if after or closed else None
    return values[index]


def _literal(
    data: bytes, unpacked: tuple[str, int, int], replacement: bytes, placeholder: Callable[[bytes], bool]
) -> tuple[int, int] | None:
    """The span of one value of a tuple unpacked, if it may be a secret: a literal, not a name, a type, a keyword,
    a list, punctuation or a placeholder."""
    kind, start, end = unpacked
    value = data[start:end]
    if kind in ("dq", "sq") and b"\\u" in value:
        value = unescaped(value)
    if (
        kind == "list"
        or replacement in value
        or not WORDY.search(value)
        or value.lower() in NOT_SECRET
        or (kind == "bare" and (NAME.fullmatch(value) or DOTTED_NAME.fullmatch(value)))
        or placeholder(value)
    ):
        return None
    return start, end
