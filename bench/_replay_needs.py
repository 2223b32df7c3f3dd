"""What the agent's next step needs from earlier in the conversation, and whether toolctx still shows it.

A recorded step copies literal values (file paths, identifiers, line numbers, quoted
strings; in customer service ids, dates, amounts, names) from what the conversation
showed the agent before it. At each model call, the values of the recorded next step
(its text and its calls' arguments) are extracted by the rules below; a value is
*needed* if an earlier tool output, tool-call argument or assistant text shows it and
neither the system prompt nor a user message (nor a tool's name) does, since those
are never compacted. A needed value is *hidden* if the prompt the framework actually
sent does not show it. Occurrences match whole: no letter, digit or underscore right
before or after (``665`` is not found in ``1665``).

Extraction rules, in this order (a value is counted once per step, as the first kind
that takes it; values of fewer than 4 characters are left out, numbers of 1 digit):

- ``quoted``: text between matching ``'``, ``"`` or backquotes on one line, 4-200 characters;
- ``date``: ``YYYY-MM-DD``, with a time if one follows;
- ``amount``: a number with ``$`` or exactly two decimals (``1,044.50``, ``$89``);
- ``path``: a token with a ``/`` between name characters, or a file name with a known extension;
- ``code``: an upper-case token of letters and digits, both, 5+ characters (``ZFA04Y``, ``HAT170``);
- ``identifier``: a (dotted) name with an underscore, a dot or a lower-to-upper case change
  (``deserialize_db_from_string``, ``QuerySet``, ``self.assertEqual``); plain words are left out;
- ``name``: two or more capitalised words (``Mia Li``);
- ``number``: a whole number of 2+ digits (line numbers, counts, ids).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from _replay_trace import Trace

__all__ = ["NEED_KINDS", "NEED_SOURCES", "Need", "argument_strings", "extract_values", "needed_values", "shows"]

TOOL_OUTPUT = "tool output"
TOOL_ARGUMENT = "tool-call argument"
ASSISTANT_TEXT = "assistant text"
NEED_SOURCES = (TOOL_OUTPUT, TOOL_ARGUMENT, ASSISTANT_TEXT)
NEED_KINDS = ("quoted", "date", "amount", "path", "code", "identifier", "name", "number")

_EXTENSIONS = "py|pyi|pyx|js|ts|tsx|jsx|json|yaml|yml|toml|cfg|ini|txt|md|rst|html|css|c|h|cc|cpp|rs|go|java|sh|sql|xml"
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("quoted", re.compile(r"(?<!\w)(?:'([^'\n]{4,200})'|\"([^\"\n]{4,200})\"|`([^`\n]{4,200})`)(?!\w)")),
    ("date", re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b")),
    ("amount", re.compile(r"\$\d[\d,]*(?:\.\d+)?|\b\d[\d,]*\.\d\d\b")),
    ("path", re.compile(rf"/?(?:[\w.-]*\w/)+[\w.-]*\w|\b[\w-]+\.(?:{_EXTENSIONS})\b")),
    ("code", re.compile(r"\b(?=[A-Z0-9]*[A-Z])(?=[A-Z0-9]*\d)[A-Z0-9]{5,}\b")),
    ("identifier", re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\b")),
    ("name", re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)+\b")),
    ("number", re.compile(r"(?<![\w.])\d{2,}(?!\d)")),
)
_CASE_CHANGE = re.compile(r"[a-z][A-Z]")
_WORD = re.compile(r"\w+")


def _is_identifier(value: str) -> bool:
    return "_" in value.strip("_") or "." in value or _CASE_CHANGE.search(value) is not None


def extract_values(text: str) -> Iterator[tuple[str, str]]:
    """(value, kind) for every value ``text`` holds by the rules above, each value once."""
    seen: set[str] = set()
    taken = bytearray(len(text))  # (each character belongs to one value at most: the first rule's)
    for kind, pattern in _RULES:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(taken[start:end]):
                continue
            value = next((g for g in match.groups() if g), None) if match.groups() else match.group()
            if value is None:
                continue
            if kind == "amount":
                value = value.lstrip("$")
            if (kind == "identifier" and not _is_identifier(value)) or (len(value) < 4 and kind != "number"):
                continue
            taken[start:end] = b"\1" * (end - start)
            if value in seen:
                continue
            seen.add(value)
            yield value, kind


def argument_strings(value: Any) -> Iterator[str]:
    """Every scalar inside a call's arguments, as text."""
    if isinstance(value, dict):
        for item in value.values():
            yield from argument_strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from argument_strings(item)
    elif isinstance(value, str):
        yield value
    elif value is not None and not isinstance(value, bool):
        yield json.dumps(value)


def shows(text: str, value: str) -> bool:
    """Whether ``text`` shows ``value`` whole (no word character right before or after it)."""
    start = text.find(value)
    while start >= 0:
        end = start + len(value)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        start = text.find(value, start + 1)
    return False


@dataclass(frozen=True)
class Need:
    """One value the next step copies from earlier: its kind, and where it sat last (source, which item)."""

    value: str
    kind: str
    source: str
    item: str  # the call id of the output or argument, or "text:<n>" for the n-th assistant text


class _History:
    """The conversation so far as pieces, with an index of the words in each to find values fast."""

    def __init__(self, excluded: Iterable[str]) -> None:
        self.pieces: list[tuple[str, str, str]] = []  # (source, item, text); source "" for system and user
        self.words: dict[str, set[int]] = defaultdict(set)
        for text in excluded:
            self.add("", "", text)

    def add(self, source: str, item: str, text: str) -> None:
        index = len(self.pieces)
        self.pieces.append((source, item, text))
        for word in set(_WORD.findall(text)):
            self.words[word].add(index)

    def last_shown(self, value: str) -> tuple[str, str] | None:
        """(source, item) of the latest piece showing ``value``; None if none does, or system or user does."""
        words = _WORD.findall(value)
        if not words:
            return None
        holding = set.intersection(*(self.words.get(w, set()) for w in words))
        found = None
        for index in sorted(holding):
            source, item, text = self.pieces[index]
            if shows(text, value):
                if not source:
                    return None  # the system prompt or a user message shows it: never hidden
                found = (source, item)
        return found


def needed_values(trace: Trace) -> list[tuple[Need, ...]]:
    """For each recorded model response, in order (each turn's steps, then its final reply): what it needs."""
    history = _History([trace.system, *(name for name in trace.tool_names)])
    needs: list[tuple[Need, ...]] = []
    said = 0
    for turn in trace.turns:
        history.add("", "", turn.user)
        for step in turn.steps:
            texts = [step.text, *(s for call in step.calls for s in argument_strings(call.args))]
            needs.append(_needs(history, texts))
            if step.text:
                history.add(ASSISTANT_TEXT, f"text:{said}", step.text)
                said += 1
            for call in step.calls:
                for text in argument_strings(call.args):
                    history.add(TOOL_ARGUMENT, call.id, text)
            for call in step.calls:
                history.add(TOOL_OUTPUT, call.id, call.output)
        needs.append(_needs(history, [turn.final or ""]))
        if turn.final:
            history.add(ASSISTANT_TEXT, f"text:{said}", turn.final)
            said += 1
    return needs


def _needs(history: _History, texts: Sequence[str]) -> tuple[Need, ...]:
    found: dict[str, Need] = {}
    for text in texts:
        for value, kind in extract_values(text):
            if value in found:
                continue
            where = history.last_shown(value)
            if where is not None:
                found[value] = Need(value, kind, *where)
    return tuple(found.values())
