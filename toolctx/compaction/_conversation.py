"""What a compactor keeps of one conversation between two model calls."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolctx.compaction._items import Item, ToolCall
from toolctx.compaction._standins import STAND_IN_MARK

__all__ = [
    "LINES_IN_USE",
    "MAX_SCAN",
    "Conversation",
    "ResultAt",
    "Usage",
    "argument_texts",
    "distinctive",
    "is_name",
    "names_by_line",
    "words_of",
]

# What the model still uses (see _inuse): the distinctive words it writes, and where they stand.
# (a dotted name: ``settings.configure``, ``models.py``; one character class to start with keeps it fast)
# (possessive: a run of name characters never gives one back, since none of them is a dot; the same matches,
# with less work at each character)
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*+(?:\.[A-Za-z_][A-Za-z0-9_]*+)*+")
# (what a pair of quotes holds on one line: a message, a key, a setting; backquotes, markdown's code in the
# model's prose, cost more than they kept in sight on recorded sessions)
_QUOTED = re.compile(r"'([^'\n]{4,200})'|\"([^\"\n]{4,200})\"")
LINES_IN_USE = "\nLines in use:\n"  # the heading of the lines a stand-in keeps
MAX_SCAN = 50_000  # characters of one item read for its words (the rest of a huge output adds little)


def distinctive(token: str) -> bool:
    """Whether a name or file name is distinctive: an underscore or a dot in it, a case change inside it, or
    capitals and digits both (``deserialize_db``, ``models.py``, ``QuerySet``, ``getX``, ``HAT170``); not a plain,
    capitalised or all-capital word, nor anything under 4 characters."""
    if len(token) < 4:
        return False
    if "_" in token or "." in token:
        return True
    if token[1:].islower():
        return False
    return not token.isupper() or not token.isalpha()


def is_name(word: str) -> bool:
    """Whether a word in use is a distinctive name (read as one by :func:`words_of`), not a quoted string."""
    known = _NAMES.get(word)
    if known is None:
        if len(_NAMES) > _REMEMBERED:
            _NAMES.clear()
        known = _NAMES[word] = _TOKEN.fullmatch(word) is not None and distinctive(word)
    return known


_REMEMBERED = 200_000  # words and runs whose reading is kept (most recur: self, return, def, a module's names)
_NAMES: dict[str, bool] = {}  # word -> is_name(word), for the words a stand-in looks up in its text
# A name never holds a character outside [A-Za-z0-9_.]: the runs of those (found by C string methods) are read
# one by one, each distinct run once (then remembered), instead of the whole text by the pattern.
_RUN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_."
_RUN_SET = frozenset(_RUN_CHARS.decode("ascii"))
_RUNS = bytes(byte if byte in _RUN_CHARS else 32 for byte in range(256))  # others (any non-ASCII byte) -> space
_LINE_RUNS = _RUNS[:10] + b"\n" + _RUNS[11:]  # the same, newlines kept
_RUN_KEPT = 100  # characters of a run whose names are remembered
_READ_RUNS: dict[str, tuple[str, ...]] = {}  # run -> the distinctive names in it


def _names_in_run(run: str) -> tuple[str, ...]:
    """The distinctive names :data:`_TOKEN` finds in ``run`` (of characters in [A-Za-z0-9_.] only)."""
    if "." in run:
        tokens = _TOKEN.findall(run)
    else:  # (a name then takes all of the run from its first letter or underscore: digits before it are not one)
        name = run.lstrip("0123456789")
        tokens = [name] if name else []
    return tuple(token for token in tokens if distinctive(token))


def name_stands_at(text: str, start: int, end: int) -> bool:
    """Whether :func:`words_of` reads ``text[start:end]`` as a name there: a whole match of :data:`_TOKEN` in
    its run of name characters (so the ``_initial.py`` of ``0001_initial.py`` is one, as is the ``ve_bayes`` of
    ``naïve_bayes``, but not the ``configure`` of ``settings.configure``)."""
    first, last = start, end
    while first and text[first - 1] in _RUN_SET:
        first -= 1
    while last < len(text) and text[last] in _RUN_SET:
        last += 1
    found = _TOKEN.search(text, first, last)
    while found is not None and found.start() < start:
        found = _TOKEN.search(text, found.end(), last)
    return found is not None and found.span() == (start, end)


def words_of(texts: Iterable[str]) -> frozenset[str]:
    """The distinctive words in ``texts`` (the first ``MAX_SCAN`` characters of each), and what each pair of
    quotes in them holds (4 to 200 characters on one line: a message printed, a key, a setting)."""
    found: set[str] = set()
    quoted: set[str] = set()
    read = _READ_RUNS
    if len(read) > _REMEMBERED:
        read.clear()
    for text in texts:
        scan = text if len(text) <= MAX_SCAN else text[:MAX_SCAN]
        # (a match of the pattern never crosses a character outside the runs, nor starts differently at the
        # start of a run than anywhere else: reading each run apart finds the same names)
        for run in set(scan.encode("utf-8", "surrogatepass").translate(_RUNS).decode("ascii").split()):
            names = read.get(run)
            if names is None:
                names = _names_in_run(run)
                if len(run) <= _RUN_KEPT:
                    read[run] = names
            if names:
                found.update(names)
        if "'" in scan or '"' in scan:  # (no quote, nothing quoted: the scan for pairs is skipped)
            quoted.update(single or double for single, double in _QUOTED.findall(scan))
    return frozenset(quoted.union(found))


def names_by_line(text: str, skip: Iterable[str] | set[str], lines: Mapping[int, object]) -> dict[int, int]:
    """Line start -> how many distinctive names stand first on that line of ``text``, but those in ``skip`` and
    the lines starting at a key of ``lines`` (a name first standing there counts nowhere)."""
    read = _READ_RUNS
    seen: set[str] = set()
    counts: dict[int, int] = {}
    start = 0
    # (a newline byte stands only for a newline in UTF-8: the lines of the runs are the lines of the text)
    runs = text.encode("utf-8", "surrogatepass").translate(_LINE_RUNS).decode("ascii").split("\n")
    for line, line_runs in zip(text.split("\n"), runs, strict=True):
        fresh = 0
        for run in line_runs.split():
            names = read.get(run)
            if names is None:
                names = _names_in_run(run)
                if len(run) <= _RUN_KEPT:
                    read[run] = names
            for name in names:
                if name not in seen and name not in skip:
                    seen.add(name)
                    fresh += 1
        if fresh and start not in lines:
            counts[start] = fresh
        start += len(line) + 1
    return counts


def argument_texts(args: Mapping[str, Any], longer_than: int = 0) -> list[str]:
    """The string arguments of one call (those a model writes: paths, commands, code) over ``longer_than``."""
    return [value for value in args.values() if isinstance(value, str) and len(value) > longer_than]


class Usage:
    """The first and the latest model response that wrote each distinctive word."""

    def __init__(self) -> None:
        self.first: dict[str, int] = {}  # word -> the first response (its number) that wrote it
        self.last: dict[str, int] = {}  # word -> the latest
        self.kept: set[str] = set()  # words a stand-in already keeps a line of
        # the words written in two responses or more that no stand-in keeps a line of (in the order found):
        # what a stand-in may keep a line of
        self.live: dict[str, None] = {}

        self.unread: list[tuple[int, Item]] = []  # what the model wrote, not read for its words yet

    def wrote(self, response: int, item: Item) -> None:
        """Response number ``response`` wrote ``item`` (its text and its calls' arguments): read when needed."""
        self.unread.append((response, item))

    def saw(self, text: str | None, args: Mapping[str, Mapping[str, Any]] = {}) -> None:
        """A stand-in shown (a result or text, or arguments by call id): the words of the lines it keeps are
        kept already, whichever worker or compactor made it (so each makes the same stand-ins after it)."""
        if isinstance(text, str) and text.startswith(STAND_IN_MARK):
            self._kept_from(text)
        for call in args.values():
            for value in call.values():
                if isinstance(value, str) and value.startswith(STAND_IN_MARK):
                    self._kept_from(value)

    def saw_calls(self, text: str, calls: Sequence[ToolCall]) -> None:
        """:meth:`saw` of an item's text and its ``calls``' arguments (those of the last call with an id, as
        :meth:`saw` takes them by call id), without building the mapping."""
        if text.startswith(STAND_IN_MARK):
            self._kept_from(text)
        shown = (calls[0].args,) if len(calls) == 1 else {call.id: call.args for call in calls}.values()
        for args in shown:
            for value in args.values():
                if isinstance(value, str) and value.startswith(STAND_IN_MARK):
                    self._kept_from(value)

    def _kept_from(self, shown: str) -> None:
        _, found, lines = shown.partition(LINES_IN_USE)
        if found:
            words = words_of((lines,))
            self.kept.update(words)
            live = self.live
            if live:
                for word in words:
                    live.pop(word, None)

    def read(self) -> None:
        """Take in the words of what the model wrote since the last call, in order (at a batch, in one go: the
        caches are warm then, and a conversation that never makes a batch never pays for it)."""
        first, last, live, kept = self.first, self.last, self.live, self.kept
        for response, item in self.unread:
            words = words_of((item.text, *(text for call in item.calls for text in argument_texts(call.args))))
            # (set operations in C where a loop would look each word up three times: most words are new)
            known = words & first.keys()
            for word in known:
                if first[word] != response and word not in kept:
                    live[word] = None
            if len(known) < len(words):
                first.update(dict.fromkeys(words - known, response))
            last.update(dict.fromkeys(words, response))
        self.unread.clear()

    def in_use_since(self, response: int) -> list[str]:
        """The words the model wrote in two responses or more, the latest of them response number ``response`` or
        after, but those a stand-in keeps a line of already: an item of ``response`` that shows one is where the
        model may have taken it from, or a copy it saw since. (Looking each up in the item costs less than
        reading the item for its words.)"""
        last = self.last
        return [w for w in self.live if last[w] >= response]  # (live: the reused words not kept)

    def taken(self, words: frozenset[str], response: int, since: int = -1) -> list[str]:
        """Those of ``words`` (an item's, of response number ``response``) the model first wrote then or after
        and wrote again after it, lately too (after response number ``since``)."""
        first, last = self.first, self.last
        after = response if response > since else since
        return [w for w in words if last.get(w, -1) > after and first[w] >= response]


ResultAt = tuple[int, ToolCall, Item]  # a result: where the call it answers is, that call, the result described


@dataclass
class Conversation:
    """What a compactor knows of one conversation: what it saw last time, and what it made of it."""

    key: Hashable = None
    task: int | str | None = None  # the task its calls are stored and found under
    length: int = 0
    first: Hashable = None
    last: Hashable = None
    emitted: list[Any] = field(default_factory=list)
    shown: int = 0  # estimated tokens of what the model is shown
    sizes: list[int] = field(default_factory=list)  # the same, per item
    calls: dict[str, tuple[int, ToolCall]] = field(default_factory=dict)  # call id -> its latest (position, call)
    results: dict[int, ResultAt] = field(default_factory=dict)  # position -> the result there
    recent: deque[int] = field(default_factory=deque)  # positions of results still inside the keep window
    texts: deque[tuple[int, str]] = field(default_factory=deque)  # (position, text): assistant text not yet old
    said: dict[int, str] = field(default_factory=dict)  # position -> text: old assistant text, a candidate
    candidates: deque[tuple[int, int]] = field(default_factory=deque)  # (position of a result or text, gain)
    available: int = 0  # estimated tokens all candidates would free
    model_calls: int = 0  # model calls made so far
    answered: int = 0  # model responses the history holds (runs of assistant items), should it be read anew
    answering: bool = False  # the last item taken in is part of a response
    final: set[int] = field(default_factory=set)  # positions of results shown a compaction marker
    early: dict[int, str] = field(default_factory=dict)  # position -> a big output's stand-in this compactor made
    seen: dict[str, int] = field(default_factory=dict)  # call id -> calls with it so far
    idents: dict[tuple[int, str], str] = field(default_factory=dict)  # a reused call id's later calls' identities
    usage: Usage = field(default_factory=Usage)  # when the model wrote each distinctive word, first and last
    at: list[int] = field(default_factory=list)  # position -> the model's responses up to it (its number)
    words: dict[int, frozenset[str]] = field(default_factory=dict)  # a candidate's distinctive words, once read
    turn: int = -1  # the turn of the shared store's lease it was last shown in (see BlobStore.turn)

    def take_in(self, item: Item, usage: bool) -> None:
        """Count the model's responses with the next ``item``; ``usage``: follow the words the model writes."""
        answer = bool(item.calls) or (item.result_of is None and item.question is None)
        self.answered += answer and not self.answering
        self.answering = answer
        self.at.append(self.answered)
        if usage:
            if answer and item.result_of is None:
                self.usage.wrote(self.answered, item)
            if item.text.startswith(STAND_IN_MARK) or item.calls:  # (a history holding stand-ins already)
                self.usage.saw_calls(item.text, item.calls)

    def ident(self, call_position: int, call_id: str) -> str:
        """What decisions about the call at ``call_position`` are kept under: its id, numbered from its id's
        second use on (a decision never passes to another call with the same id and content)."""
        return self.idents.get((call_position, call_id), call_id)
