"""Tool calls always paired with their results: the repaired view, and the blocks compaction moves whole.

Providers reject a request in which a tool result has no call before it, or a
call has no result right after its message (the "orphaned tool message" 400).
The history may hold such things (a loop stopped between a call and its result,
a result added twice); the model is never shown them: :func:`paired` puts each
call's result right after its message, drops results of no call and duplicates,
and answers a call that has no result with a short placeholder. The history
itself is left as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolctx.assembly._types import HistoryMessage

__all__ = ["MISSING_RESULT", "Pairing", "block_at", "blocks", "paired"]

MISSING_RESULT = "[no result was recorded for this tool call]"


def paired(messages: Sequence[HistoryMessage]) -> tuple[list[HistoryMessage], int]:
    """The messages with every call followed by exactly its result; and how many repairs that took.

    Results recorded out of place (before their call, or after other messages)
    move right after their call's message; that is not counted as a repair.
    """
    results: dict[str, HistoryMessage] = {}
    calls: set[str] = set()
    repairs = 0
    for message in messages:
        if message.role == "tool":
            call_id = message.tool_call_id or ""
            if call_id in results:
                repairs += 1  # a second result for one call: the first one stands
            else:
                results[call_id] = message
        elif message.tool_calls:
            calls.update(call.id for call in message.tool_calls)
    repairs += sum(1 for call_id in results if call_id not in calls)  # results of no call
    out: list[HistoryMessage] = []
    made: set[str] = set()
    for message in messages:
        if message.role == "tool":
            continue  # shown right after its call's message
        if not message.tool_calls:
            out.append(message)
            continue
        fresh = tuple(c for c in message.tool_calls if c.id not in made)
        shown = message
        if len(fresh) != len(message.tool_calls):
            repairs += 1  # a call id made twice: the first call stands
            shown = message.model_copy(update={"tool_calls": fresh})
        made.update(c.id for c in fresh)
        out.append(shown)
        for call in fresh:
            found = results.get(call.id)
            if found is None:
                repairs += 1
                found = HistoryMessage(
                    id=f"{call.id}:missing", role="tool", content=MISSING_RESULT, tool_call_id=call.id
                )
            out.append(found)
    return out, repairs


class Pairing:
    """:func:`paired` for a history that grows at its end: only the new messages are looked at.

    When the messages start with exactly those of the last call (the same
    objects, or equal ones), that call's pairing needed no repair, and the new
    messages make no call id already made, pairing the whole equals pairing the
    earlier part and the new part apart, so only the new part is paired. Anything
    else pairs the whole again.
    """

    def __init__(self) -> None:
        self._input: list[HistoryMessage] = []
        self._output: list[HistoryMessage] = []
        self._calls: set[str] = set()
        self._clean = False  # the last pairing needed no repair

    def __call__(self, messages: Sequence[HistoryMessage]) -> tuple[list[HistoryMessage], int]:
        known = len(self._input)
        if self._clean and 0 < known <= len(messages) and list(messages[:known]) == self._input:
            tail = messages[known:]
            made = [c.id for m in tail for c in m.tool_calls]
            if self._calls.isdisjoint(made):
                out, repairs = paired(tail)
                self._remember(messages, self._output + out, made, repairs)
                return list(self._output), repairs
        out, repairs = paired(messages)
        self._calls.clear()
        self._remember(messages, out, [c.id for m in messages for c in m.tool_calls], repairs)
        return list(out), repairs

    def _remember(
        self, messages: Sequence[HistoryMessage], out: list[HistoryMessage], made: list[str], repairs: int
    ) -> None:
        self._input, self._output, self._clean = list(messages), out, repairs == 0
        self._calls.update(made)


def block_at(messages: Sequence[HistoryMessage], index: int) -> tuple[int, int]:
    """The ``(start, end)`` of the block of :func:`blocks` that holds ``messages[index]``, found from there."""
    start = index
    while start > 0 and messages[start].role == "tool":
        start -= 1
    if not messages[start].tool_calls:  # no call right before this run of results: each stands alone
        start = index
    end = start + 1
    if messages[start].tool_calls:
        while end < len(messages) and messages[end].role == "tool":
            end += 1
    return start, end


def blocks(messages: Sequence[HistoryMessage]) -> list[tuple[int, int]]:
    """``(start, end)`` index ranges moved whole by compaction: a message with calls and its results, or one message.

    ``messages`` must be :func:`paired`.
    """
    out: list[tuple[int, int]] = []
    i, n = 0, len(messages)
    while i < n:
        j = i + 1
        if messages[i].tool_calls:
            while j < n and messages[j].role == "tool":
                j += 1
        out.append((i, j))
        i = j
    return out
