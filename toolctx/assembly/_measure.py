"""Counting what a model is sent: messages with their framing, tool definitions, the reply priming.

The convention is OpenAI's for chat input: each message costs its text plus
:data:`FRAMING` tokens of role and separator markup, a tool call its name and its
arguments as JSON, the tool definitions their JSON, and every request
:data:`REPLY_PRIMING` tokens. Counts are exact for the counter given (an exact
tokenizer from :mod:`toolctx.tokens`, or the estimate) and cached per message
object, so a long history is counted once, not on every model call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolctx.assembly._types import HistoryMessage
from toolctx.tokens import EstimateCounter, TokenCounter, get_counter

__all__ = ["FRAMING", "REPLY_PRIMING", "Measure", "arguments_json", "resolve_counter", "tool_json"]

FRAMING = 3
REPLY_PRIMING = 3


def arguments_json(arguments: Mapping[str, Any]) -> str:
    """A tool call's arguments as the JSON text a model is sent (the same in every renderer)."""
    return json.dumps(arguments, ensure_ascii=False)


def tool_json(definition: Mapping[str, Any]) -> str:
    """A tool definition as the JSON text that is counted."""
    return json.dumps(definition, ensure_ascii=False)


def resolve_counter(counter: TokenCounter | str | None) -> TokenCounter:
    """A counter from a :class:`~toolctx.tokens.TokenCounter`, a :func:`~toolctx.tokens.get_counter` name, or None.

    None picks the exact ``o200k_base`` counter when its tokenizer is installed
    (``toolctx[tokens]``), else the estimate.
    """
    if counter is None:
        try:
            exact = get_counter("o200k_base")
            exact.count("a")  # loads the tokenizer now, so a missing one is found here
        except ImportError:
            return EstimateCounter()
        return exact
    if isinstance(counter, str):
        return get_counter(counter)
    if isinstance(counter, TokenCounter):
        return counter
    raise TypeError(f"counter must be a TokenCounter (name, count(text)), a counter name or None, not {counter!r:.80}")


class Measure:
    """Exact counts of messages and texts with one counter, each message counted once."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._messages: dict[int, tuple[HistoryMessage, int]] = {}
        self._texts: dict[str, int] = {}
        self._walked: list[HistoryMessage] = []  # the last history walked by history(), and what it found
        self._walked_tokens = 0
        self._walked_pinned: list[int] = []

    def text(self, text: str) -> int:
        """Tokens of ``text`` (small texts that recur, such as components, are remembered)."""
        if not text:
            return 0
        found = self._texts.get(text)
        if found is None:
            found = self.counter.count(text)
            if len(self._texts) > 4096:
                self._texts.clear()
            self._texts[text] = found
        return found

    def message(self, message: HistoryMessage) -> int:
        """Tokens of one message as sent: its content, its calls' names and arguments, and its framing."""
        found = self._messages.get(id(message))
        if found is not None and found[0] is message:
            return found[1]
        count = self.counter.count
        tokens = FRAMING + (count(message.content) if message.content else 0)
        for call in message.tool_calls:
            tokens += count(call.name) + count(arguments_json(call.arguments))
        self._messages[id(message)] = (message, tokens)
        return tokens

    def messages(self, messages: Iterable[HistoryMessage]) -> int:
        return sum(self.message(m) for m in messages)

    def history(self, messages: Sequence[HistoryMessage]) -> tuple[int, list[int]]:
        """Tokens of ``messages`` and the indices of the pinned ones.

        A history that starts with the one walked last time (the same messages, or
        equal ones) is walked from where that one ended: a model call that adds one
        message costs one message, not the whole history.
        """
        known = len(self._walked)
        if 0 < known <= len(messages) and list(messages[:known]) == self._walked:
            tokens, pinned, start = self._walked_tokens, list(self._walked_pinned), known
        else:
            tokens, pinned, start = 0, [], 0
        for index in range(start, len(messages)):
            message = messages[index]
            tokens += self.message(message)
            if message.pinned:
                pinned.append(index)
        self._walked, self._walked_tokens, self._walked_pinned = list(messages), tokens, pinned
        return tokens, list(pinned)

    def tools(self, definitions: Sequence[Mapping[str, Any]]) -> int:
        return sum(self.text(tool_json(d)) for d in definitions)

    def prune(self, live: Sequence[HistoryMessage]) -> None:
        """Forget messages no longer shown once the cache holds many more than are live."""
        if len(self._messages) > 2 * len(live) + 256:
            keep = {id(m) for m in live}
            self._messages = {k: v for k, v in self._messages.items() if k in keep}
