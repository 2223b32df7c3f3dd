"""Restorable history compaction: old messages leave the prompt for the session's store and a marker.

A :class:`HistorySpan` is a run of old messages the model no longer sees. Before
it is made, the messages (as kept in the history, whole) are stored in the
session as one call of the pseudo-tool ``conversation_history``; the prompt shows
one short marker in their place, with the handle ``ctx:<id>`` that
``read_context`` and :meth:`ContextAssembler.expand` read back, and a summary if
the caller's model wrote one. Spans take whole blocks (a message with tool calls
and all its results), so no call is ever separated from its result, and never
take pinned messages or the current input.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from toolctx.assembly._measure import Measure
from toolctx.assembly._pairing import blocks
from toolctx.assembly._types import HistoryMessage
from toolctx.compaction import STAND_IN_MARK
from toolctx.sessions import ContextSession
from toolctx.telemetry import events

__all__ = ["HISTORY_TOOL", "MARKER_BOUND", "HistorySpan", "make_span", "marker", "merge_spans", "shown_with_spans"]

HISTORY_TOOL = "conversation_history"


class HistorySpan(BaseModel):
    """Messages compacted out of the prompt: their ids, the handle of their stored copy, an optional summary."""

    model_config = ConfigDict(frozen=True)

    handle: str
    message_ids: tuple[str, ...]
    tokens: int
    summary: str | None = None


def marker(span: HistorySpan) -> HistoryMessage:
    """The message shown in a span's place."""
    text = (
        f"{STAND_IN_MARK} {span.handle}: {len(span.message_ids)} earlier messages ({span.tokens:,} tokens) "
        f'are stored; read_context(id="{span.handle}") reads them.'
    )
    if span.summary:
        text += f"\nSummary of them: {span.summary}"
    return HistoryMessage(id=f"{span.handle}:marker", role="user", content=text)


def shown_with_spans(view: Sequence[HistoryMessage], spans: Sequence[HistorySpan]) -> list[HistoryMessage]:
    """``view`` (paired) with each span's messages replaced by its marker, at its first message's place.

    A result whose call is in a span goes with it, even if it arrived after the span was made.
    """
    if not spans:
        return list(view)
    where: dict[str, HistorySpan] = {}
    for span in spans:
        for message_id in span.message_ids:
            where[message_id] = span
    markers = {span.handle: marker(span) for span in spans}
    out: list[HistoryMessage] = []
    emitted: set[str] = set()
    gone_calls: set[str] = set()
    for message in view:
        holder = where.get(message.id)
        if holder is None and message.role == "tool" and message.tool_call_id in gone_calls:
            continue
        if holder is None:
            out.append(message)
            continue
        gone_calls.update(call.id for call in message.tool_calls)
        if holder.handle not in emitted:
            emitted.add(holder.handle)
            out.append(markers[holder.handle])
    return out


def make_span(
    shown: Sequence[HistoryMessage],
    needed: int,
    protected: Collection[str],
    keep_recent: int,
    measure: Measure,
    originals: Mapping[str, HistoryMessage],
    session: Callable[[], ContextSession],
    joining: bool = False,
    task: str | None = None,
) -> HistorySpan | None:
    """Store the oldest compactable blocks of ``shown`` that free ``needed`` tokens; None if none could be stored.

    ``protected``: ids never compacted (pinned messages, the current input, markers).
    ``keep_recent``: the last messages not touched. ``originals``: the history's own
    copy of each message by id (stored whole, not as shown). ``task``: the
    conversation they are stored under (only it reads them back).
    """
    limit = max(0, len(shown) - keep_recent)
    chosen: list[HistoryMessage] = []
    freed = 0
    marker_cost = 0 if joining else measure.message(MARKER_BOUND)  # joining: it shares an existing marker
    for start, end in blocks(shown):
        if end > limit:
            break
        block = shown[start:end]
        if any(m.id in protected for m in block):
            continue
        chosen.extend(block)
        freed += measure.messages(block)
        if freed - marker_cost >= needed:
            break
    if not chosen or freed <= marker_cost:
        return None
    handle = _store([originals.get(m.id, m) for m in chosen], session, task)
    return None if handle is None else HistorySpan(handle=handle, message_ids=tuple(m.id for m in chosen), tokens=freed)


def merge_spans(
    spans: Sequence[HistorySpan],
    originals: Mapping[str, HistorySpan | HistoryMessage],
    session: Callable[[], ContextSession],
    task: str | None = None,
) -> HistorySpan | None:
    """One span for all of ``spans`` (stored again as one), so the prompt needs one marker; None if not stored."""
    ids = tuple(i for span in spans for i in span.message_ids)
    messages = [m for i in ids if isinstance(m := originals.get(i), HistoryMessage)]
    handle = _store(messages, session, task)
    if handle is None:
        return None
    return HistorySpan(handle=handle, message_ids=ids, tokens=sum(span.tokens for span in spans))


def _store(messages: Sequence[HistoryMessage], session: Callable[[], ContextSession], task: str | None) -> str | None:
    """Store messages whole as one ``conversation_history`` call under the conversation ``task``; its handle,
    or None (logged) if that failed."""
    stored = [m.model_dump(mode="json") for m in messages if not m.id.endswith(":missing")]
    if not stored:
        return None
    try:
        pointer = session().save_context(
            HISTORY_TOOL,
            {"messages": len(stored), "first": stored[0]["id"], "last": stored[-1]["id"]},
            stored,
            task_id=task,
        )
    except Exception as exc:  # the messages stay in the prompt: nothing leaves it without a stored copy
        events.compaction_failed("could not store old messages to compact the history; they stay in the prompt", exc)
        return None
    return pointer.handle if pointer.stored else None


MARKER_BOUND = marker(HistorySpan(handle="ctx:" + "0" * 32, message_ids=("x",) * 99_999, tokens=10**10))
"""A marker at least as long as any without a summary: what one marker may cost, at most."""
