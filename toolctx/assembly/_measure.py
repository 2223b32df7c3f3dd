"""Counting what a model is sent, as :func:`toolctx.tokens.count_request` counts the OpenAI request.

Each message is counted as its OpenAI chat form (:func:`openai_message`) by
:func:`toolctx.tokens.count_message` (framing, role, text, each tool call's name
and JSON arguments), the tool definitions by :func:`toolctx.tokens.count_tools`,
and every request adds the reply priming, so a prepared context's ``used`` is
``count_request(prepared.to_openai(), tools=prepared.openai_tools(), counter=...)``
with the same counter. Counts are cached per message object, so a long history
is counted once, not on every model call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolctx.assembly._types import HistoryMessage, Role
from toolctx.tokens import TokenCounter, count_message, count_request, count_tools

__all__ = ["Measure", "arguments_json", "openai_message"]


def arguments_json(arguments: Mapping[str, Any]) -> str:
    """A tool call's arguments as the JSON text a model is sent (the same in every renderer)."""
    return json.dumps(arguments, ensure_ascii=False)


def openai_message(message: HistoryMessage, role: Role | None = None) -> dict[str, Any]:
    """One message in OpenAI's Chat Completions form (``role`` overrides its own): what is sent and counted."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.content or None}
        if message.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments_json(c.arguments)}}
                for c in message.tool_calls
            ]
        return out
    return {"role": role or message.role, "content": message.content}


class Measure:
    """Exact counts of messages and texts with one counter, each message counted once."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.priming = count_request((), counter=counter)  # what every request adds (the reply priming)
        self._messages: dict[int, tuple[HistoryMessage, int]] = {}
        self._texts: dict[str, int] = {}
        self._framing: dict[str, int] = {}
        self._tools: tuple[str, int] = ("[]", 0)
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

    def framing(self, role: Role) -> int:
        """Tokens a message of ``role`` costs besides its text."""
        found = self._framing.get(role)
        if found is None:
            found = self._framing[role] = count_message({"role": role, "content": ""}, self.counter)
        return found

    def message(self, message: HistoryMessage) -> int:
        """Tokens of one message as sent: its framing and role, its text, its calls' names and arguments."""
        found = self._messages.get(id(message))
        if found is not None and found[0] is message:
            return found[1]
        tokens = count_message(openai_message(message), self.counter)
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
        """Tokens of the tool definitions (the last list's count is remembered: it seldom changes)."""
        key = json.dumps(list(definitions), ensure_ascii=False, sort_keys=True, default=str)
        if key != self._tools[0]:
            self._tools = (key, count_tools(definitions, self.counter))
        return self._tools[1]

    def prune(self, live: Sequence[HistoryMessage]) -> None:
        """Forget messages no longer shown once the cache holds many more than are live."""
        if len(self._messages) > 2 * len(live) + 256:
            keep = {id(m) for m in live}
            self._messages = {k: v for k, v in self._messages.items() if k in keep}
