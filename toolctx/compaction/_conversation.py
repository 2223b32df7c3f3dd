"""What a compactor keeps of one conversation between two model calls."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolctx.compaction._items import Item, ToolCall

__all__ = ["DISTINCTIVE", "MAX_SCAN", "Conversation", "ResultAt", "Usage", "argument_texts", "words_of"]

# What the model still uses (see _inuse): the distinctive words it writes, and where they stand.
DISTINCTIVE = re.compile(
    r"(?<![\w.])(?:"
    r"[A-Za-z]\w*_\w+"  # snake_case and SCREAMING_CASE
    r"|_\w+"  # _private, __dunder__
    r"|[a-z]+[A-Z]\w*"  # camelCase
    r"|[A-Z][a-z0-9]+[A-Z]\w*"  # PascalCase with two capitals or more
    r"|[\w-]+\.[A-Za-z]{1,5}"  # file names
    r"|(?=[A-Z0-9]{5})[A-Z0-9]*(?:[A-Z]\d|\d[A-Z])[A-Z0-9]*"  # codes: HAT170, ZFA04Y
    r")(?![\w])"
)
MAX_SCAN = 50_000  # characters of one item read for its words (the rest of a huge output adds little)


def words_of(texts: Iterable[str]) -> frozenset[str]:
    """The distinctive words in ``texts``."""
    found: set[str] = set()
    for text in texts:
        found.update(DISTINCTIVE.findall(text if len(text) <= MAX_SCAN else text[:MAX_SCAN]))
    return frozenset(found)


def argument_texts(args: Mapping[str, Any], longer_than: int = 0) -> list[str]:
    """The string arguments of one call (those a model writes: paths, commands, code) over ``longer_than``."""
    return [value for value in args.values() if isinstance(value, str) and len(value) > longer_than]


class Usage:
    """The first and the latest model response that wrote each distinctive word."""

    def __init__(self) -> None:
        self.first: dict[str, int] = {}  # word -> the first response (its number) that wrote it
        self.last: dict[str, int] = {}  # word -> the latest
        self.kept: set[str] = set()  # words a stand-in already keeps a line of
        self.new: dict[int, list[str]] = {}  # response number -> the words first written in it

    def wrote(self, response: int, item: Item) -> None:
        """Response number ``response`` wrote ``item`` (its text and its calls' arguments)."""
        words = words_of((item.text, *(text for call in item.calls for text in argument_texts(call.args))))
        first, last = self.first, self.last
        for word in words:
            if word not in first:
                first[word] = response
                self.new.setdefault(response, []).append(word)
            last[word] = response

    def taken_since(self, response: int, now: int) -> list[str]:
        """The words the model first wrote in response number ``response`` or after (up to ``now``) and wrote
        again after it, but those a stand-in keeps a line of already."""
        last, kept, new = self.last, self.kept, self.new
        return [w for r in range(response, now + 1) for w in new.get(r, ()) if last[w] > response and w not in kept]

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
        if usage and answer and item.result_of is None:
            self.usage.wrote(self.answered, item)

    def ident(self, call_position: int, call_id: str) -> str:
        """What decisions about the call at ``call_position`` are kept under: its id, numbered from its id's
        second use on (a decision never passes to another call with the same id and content)."""
        return self.idents.get((call_position, call_id), call_id)
