"""The compaction policy's view of a framework's messages: items, their tool calls, and the edits it makes.

An adapter describes each message or input item as an :class:`Item` (with the
:class:`ToolCall` objects it makes) through an :class:`ItemAdapter`, and applies the
policy's :class:`Edit` objects back to its own objects.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar

__all__ = ["Edit", "Item", "ItemAdapter", "ToolCall"]

T = TypeVar("T")


class ToolCall(NamedTuple):  # (named tuples: made for every message, faster to build than frozen dataclasses)
    """One tool call an item makes.

    ``size``: the length of its arguments as sent (their JSON, in characters or
    UTF-8 bytes), so the arguments of a call sent short are never read to look
    for long ones. An adapter that gives it must give at least the length of
    every string argument; -1 (the default) when not known. ``tokens``: the
    estimated tokens of its arguments as sent; with ``size``, what standing in
    for a long argument frees is taken as its share of them, instead of
    estimating the argument again (-1: not known).
    """

    id: str
    name: str
    args: Mapping[str, Any]
    size: int = -1
    tokens: int = -1


class Item(NamedTuple):
    """One message or input item as the policy sees it.

    ``tokens``: its estimated size as shown. ``calls``: the tool calls it makes.
    ``result_of``: the call id it answers, with its ``text`` and ``tool``;
    ``is_error``: the framework marks it as an error. ``question``: the text of
    a user message (tool calls after it are tagged with it). For an assistant
    message, ``text`` is what it says besides its calls, which the policy may
    stand in for once it is old (leave it empty to keep a message as it is).
    """

    tokens: int
    calls: tuple[ToolCall, ...] = ()
    result_of: str | None = None
    tool: str = ""
    text: str = ""
    is_error: bool = False
    question: str | None = None


class ItemAdapter(Protocol[T]):
    """How a framework's messages are read and edited."""

    def fingerprint(self, item: T) -> Hashable:
        """Something equal for the same item on the next call (its id, type and call id)."""

    def describe(self, item: T) -> Item:
        """The item as the policy sees it."""

    def apply(self, item: T, text: str | None, args: Mapping[str, Mapping[str, Any]]) -> T:
        """A copy of ``item`` with its text replaced (if ``text``: a result, or an assistant's text) and its
        calls' arguments (by call id)."""


@dataclass(frozen=True)
class Edit:
    """One decision: the result text or the arguments a tool call is shown with from now on.

    ``position``: the result's message; ``call_position``: its call's; ``digest``:
    what the decision remembers of the output it replaces; ``originals``: the same
    of each argument it replaces. An edit of old assistant text has no
    ``call_id``; ``text`` is the text it replaces (the message at ``position``) and
    ``result`` its marker.
    """

    call_id: str | None
    result: str | None = None
    args: Mapping[str, Any] | None = None
    text: str | None = None
    position: int = -1
    call_position: int = -1
    digest: int = 0
    originals: Mapping[str, int] | None = None
