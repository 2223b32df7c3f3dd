"""The tool-time rule: store a tool's call, then show its output whole, queue it, or stand it in.

Every host that decides what the model is shown of a tool's output (the LangChain
middleware and ``persist_tool``, the Agents SDK's persisted tools, the
assembler's :class:`~toolctx.assembly.ToolOutputPlugin`) calls :func:`at_tool_time`
and only translates its framework's objects around it. Paths that show the model
nothing of their own (a failed call the framework reports, a ``Command`` that
updates a graph's state, the Agents SDK's observing hooks) store the call with
:func:`persist_call`, the rule's first step.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import xxhash

from toolctx._internal import internal_error
from toolctx._limits import ALWAYS, NEVER
from toolctx.compaction._decisions import text_key
from toolctx.compaction._items import Item, ToolCall
from toolctx.compaction._notes import notes
from toolctx.compaction._settings import CompactionSettings, pays_for_cache_break
from toolctx.compaction._standins import ASSISTANT_TEXT, handle_of, stand_in, stored_text
from toolctx.models import ContextPointer, ErrorInfo
from toolctx.sessions import CallParts, ContextSession, SavedCall
from toolctx.telemetry import events
from toolctx.tokens import estimate_tokens_cached, remembers_estimate

__all__ = [
    "ToolTime",
    "at_tool_time",
    "over_limit",
    "persist_call",
    "queue_call",
    "shown_output",
    "shown_whole",
    "store_late",
    "store_said_ahead",
    "stored_call",
    "stored_said",
]


@dataclass(frozen=True, slots=True)
class ToolTime:
    """What :func:`at_tool_time` did with a tool's output.

    ``shown``: the stand-in the model gets instead of the output, or None to show
    the output as it is. ``saved``: the stored call, None when it was queued (it is
    stored with the next ones) or could not be stored.
    """

    shown: str | None
    saved: SavedCall | None


def at_tool_time(
    settings: CompactionSettings,
    session: ContextSession,
    tool_name: str,
    args: Mapping[str, Any],
    output: Any,
    text: str,
    *,
    error: BaseException | ErrorInfo | None = None,
    call_id: str | None = None,
    task_id: int | str | None = None,
    shown_as_text: bool = True,
    queue: bool = True,
    argument_notes: Sequence[str] = (),
) -> ToolTime:
    """Store one tool call and decide what the model is shown of its output ``text``. Never raises.

    The rule, the same for every host:

    1. a successful call whose output is the string ``text`` and certainly shown
       whole (:func:`shown_whole`) is queued: stored with the next ones as soon as
       anything reads the session, which costs the tool call less;
    2. any other call is stored now (:func:`persist_call`): an error, an output that
       is not a plain string (``output`` may carry more than ``text``, an artifact
       say), or one that may be big;
    3. a stored, successful, big output is shown as a stand-in cut from the stored
       copy (:func:`shown_output`); anything else is shown as it is.

    ``text`` is the output as the model reads it. ``shown_as_text=False``: store the call
    but never stand in for it (an output the framework does not show the model as
    text). ``queue=False``: store it now even when it is shown whole (a host that
    hands the call's id on at once). A plain dict of ``args`` is encoded when the
    call is queued; another mapping is read when it is stored, and must not change
    meanwhile. ``argument_notes``: what the stored arguments do not say (a call with
    them is stored now): see :func:`persist_call`.

    In a shared store (object storage), an output shown whole is uploaded in the
    background (the tool returns at once; no handle of it is shown yet, and a
    framework that saves the tool's result keeps it whole), while one given a
    stand-in is in the store before the tool returns, or shown whole if its upload
    failed. With the session's ``background_uploads``, neither waits (the next
    model call does).
    """
    how = (error, call_id, task_id, shown_as_text, queue and not argument_notes, argument_notes)
    if session.store.shared and not session.save_path.background:
        with session.save_path.deferred():
            done = _at_tool_time(settings, session, tool_name, args, output, text, *how)
        if done.shown is None or done.saved is None:
            return done
        try:
            session.save_path.settle(ids=(done.saved.id,))  # (its handle goes out with the tool's result)
            landed = session.unstored(done.saved.id) is None  # (a failed upload is said and counted already)
        except Exception as exc:
            events.compaction_failed(
                f"could not tell whether an output of tool {tool_name!r} is stored; shown whole", exc
            )
            landed = False
        return done if landed else ToolTime(None, done.saved)
    return _at_tool_time(settings, session, tool_name, args, output, text, *how)


def _at_tool_time(
    settings: CompactionSettings,
    session: ContextSession,
    tool_name: str,
    args: Mapping[str, Any],
    output: Any,
    text: str,
    error: BaseException | ErrorInfo | None,
    call_id: str | None,
    task_id: int | str | None,
    shown_as_text: bool,
    queue: bool,
    argument_notes: Sequence[str],
) -> ToolTime:
    try:
        whole = queue and error is None and shown_as_text and output is text and shown_whole(settings, text, tool_name)
    except Exception as exc:  # (a text that is not one, say: stored now, and decided below)
        internal_error(f"could not tell how to show an output of tool {tool_name!r}", exc)
        whole = False
    if whole:  # (queue_call, written out: the tool hook's most frequent path, run with the caches cold)
        try:
            query_id = notes(session).query_id
            session.record_call_later(
                tool_name, args, text, task_id, query_id, call_id=None if call_id is None else str(call_id)
            )
        except Exception as exc:
            events.save_failed("store", f"could not store a call of tool {tool_name!r}", exc)
        return _QUEUED
    saved = persist_call(
        session, tool_name, args, output, error=error, call_id=call_id, task_id=task_id, argument_notes=argument_notes
    )
    if saved is None or error is not None or not shown_as_text:
        return ToolTime(None, saved)
    try:
        shown = shown_output(settings, session, saved, text)
    except Exception as exc:  # (never in the way of the tool's output)
        events.compaction_failed(
            f"could not make a stand-in for a call of tool {tool_name!r}; the model gets it whole", exc
        )
        shown = None
    return ToolTime(shown, saved)


_QUEUED = ToolTime(None, None)  # (the usual outcome: one object, not one per call)


def _short_ascii(limit: int, text: str) -> bool:
    """Whether ``text`` is certainly within ``limit`` tokens without an estimate: never more tokens than
    bytes, so ASCII of no more characters than that."""
    return len(text) <= limit and text.isascii()


def persist_call(
    session: ContextSession,
    tool_name: str,
    args: Mapping[str, Any],
    result: Any,
    *,
    error: BaseException | ErrorInfo | None = None,
    call_id: str | None = None,
    task_id: int | str | None = None,
    argument_notes: Sequence[str] = (),
) -> SavedCall | None:
    """Store one call, tagged with the session's latest question; None (logged and warned) if that fails.

    Every adapter path stores through here, so storing never breaks the tool.
    ``argument_notes``: what the stored arguments do not say, such as "content passed
    by reference: ctx:<id>" (:meth:`~toolctx.ContextSession.record_call`).
    """
    try:
        query_id = notes(session).query_id
        return session.record_call(
            tool_name,
            args,
            result,
            task_id,
            query_id,
            error=error,
            call_id=None if call_id is None else str(call_id),
            argument_notes=argument_notes,
        )
    except Exception as exc:
        events.save_failed("store", f"could not store a call of tool {tool_name!r}", exc)
        return None


def queue_call(
    session: ContextSession,
    tool_name: str,
    args: Mapping[str, Any],
    result: str,
    *,
    call_id: str | None = None,
    task_id: int | str | None = None,
) -> bool:
    """:func:`persist_call` for a string output the model is shown whole (:func:`shown_whole`), stored later.

    The call is tagged and timed now and stored with the calls queued before it
    as soon as anything reads the session (a batch, ``read_context``, a lookup) or
    when it ends: storing a few in one go costs a tool hook less than storing each
    on its own. A plain dict of ``args`` is encoded now, so what the framework
    does with it afterwards is not stored; another mapping must not change until
    stored. False (logged) if the session refused it; the model sees the output
    whole either way.
    """
    try:
        query_id = notes(session).query_id
        session.record_call_later(
            tool_name, args, result, task_id, query_id, call_id=None if call_id is None else str(call_id)
        )
        return True
    except Exception as exc:
        events.save_failed("store", f"could not store a call of tool {tool_name!r}", exc)
        return False


def shown_whole(settings: CompactionSettings, text: str, tool: str | None = None) -> bool:
    """Whether an output (of ``tool``) is certainly shown as it is, being estimated at most its limit
    (:meth:`~toolctx.compaction.CompactionSettings.limit_for`; ``max_output_tokens`` without a tool).

    ASCII of no more characters than that needs no estimate (never more tokens
    than bytes). Otherwise a text of at most 4,096 characters is estimated (the
    estimate is remembered for the model call that reads it); a longer one gives
    False without an estimate, and :func:`shown_output`, which estimates it once,
    decides (it may still show it whole).
    """
    limit = settings.limit_for(tool, text)
    if _short_ascii(limit, text) or limit == NEVER:
        return True
    if limit == ALWAYS:  # (whole only when its stand-in would show all of it)
        return len(text) <= settings.head_chars + settings.tail_chars
    return remembers_estimate(text) and estimate_tokens_cached(text) <= limit


def over_limit(settings: CompactionSettings, tool: str, text: str) -> int:
    """The estimated tokens of an output that the rules give a stand-in (0 if they show it as it is).

    Over the tool's limit (:meth:`~toolctx.compaction.CompactionSettings.limit_for`: its
    ``tool_limits`` entry, else its decorator's, else ``max_output_tokens``; never
    for ``exclude_tools`` and ``"never"``), longer than the ``head_chars + tail_chars``
    its stand-in would keep (else it would show it all). Whether the first
    stand-in pays for bringing ``read_context`` in is :func:`shown_output`'s to decide.
    """
    return _over(settings, settings.limit_for(tool, text), text)


def _over(settings: CompactionSettings, limit: int, text: str) -> int:
    if limit == NEVER or _short_ascii(limit, text) or len(text) <= settings.head_chars + settings.tail_chars:
        return 0
    tokens = estimate_tokens_cached(text)
    return tokens if tokens > limit else 0


def shown_output(
    settings: CompactionSettings, session: ContextSession, pointer: SavedCall | ContextPointer | None, text: str
) -> str | None:
    """The stand-in the model gets instead of a big output ``text``, or None to show the output as it is.

    Only a stored, non-error output over its tool's limit (:func:`over_limit`) gets one,
    cut from the stored copy (what ``read_context`` returns), so a failure to
    store always shows the full output; so does an output of at most
    ``head_chars + tail_chars`` characters, which its stand-in would show whole
    (dense text over ``max_output_tokens`` in fewer characters: digits, CJK).
    The conversation's first stand-in brings ``read_context`` into the tool list,
    which breaks the provider's prompt cache for the whole prompt once: it is made
    only for an output that frees enough to pay for that
    (:func:`pays_for_cache_break`), or of a tool whose limit is ``"always"``.
    """
    if pointer is None or not pointer.stored or pointer.is_error:
        return None
    limit = settings.limit_for(pointer.tool if isinstance(pointer, SavedCall) else pointer.tool_name, text)
    tokens = _over(settings, limit, text)
    if not tokens:
        return None
    session_notes = notes(session)
    freed = tokens - settings.stand_in_tokens
    broken = session_notes.shown_tokens + session_notes.prefix_tokens  # (the tool list changes: all of it)
    if (
        not session_notes.offer_read_context
        and limit != ALWAYS
        and not pays_for_cache_break(freed, broken, session_notes.model_calls, settings.cached_price)
    ):
        return None
    try:
        found = session.load_contexts([pointer.id])
    except Exception as exc:
        events.compaction_failed(f"could not read {pointer.handle} back; the model gets the whole output", exc)
        return None
    if not found:
        return None
    events.stood_in(found[0].tool_name, freed, 0 if session_notes.offer_read_context else broken)
    session_notes.offer_read_context = True
    return stand_in(found[0], stored_text(found[0]), settings.head_chars, settings.tail_chars)


def stored_call(session: ContextSession, call: ToolCall, result: Item, task: int | str | None) -> CallParts | None:
    """The newest call stored under ``task`` with this call id, arguments and output (as stored: redacted)."""
    candidates = session.call_parts(call.id, task_id=task)
    if not candidates:
        return None
    args = call.args if isinstance(call.args, dict) else dict(call.args)
    text = result.text
    for parts in candidates:
        if parts.args == args and stored_text(parts) == text:
            return parts
    kept_args, kept = session.kept_call(call.name or result.tool or "tool", args, text)
    for parts in candidates:
        if parts.args == kept_args and stored_text(parts) == kept:
            return parts
    return None


def unstored_text(session: ContextSession, text: str) -> str | None:
    """The whole output behind a stand-in whose upload failed after all (None: its handle reads back). With
    ``background_uploads``, once the upload is done (a model call is about to show the stand-in)."""
    ref = handle_of(text) or ""
    if ref and session.save_path.background:
        session.save_path.settle(ids=(ref,))
    held = session.unstored(ref) if session.save_path.failed_writes else None
    return None if held is None else stored_text(held)


def store_late(session: ContextSession, call: ToolCall, result: Item, task: int | str | None) -> SavedCall | None:
    """A result made without the adapter's tool hook (or before it): store it now, or give up (None)."""
    args = call.args if isinstance(call.args, dict) else dict(call.args)  # (stored as a plain dict)
    return persist_call(session, call.name or result.tool or "tool", args, result.text, call_id=call.id, task_id=task)


def stored_said(session: ContextSession, task: int | str | None, said: str) -> CallParts | None:
    """The stored copy of a conversation's (``task``'s) assistant text ``said``: found, or stored now (once
    :func:`store_said_ahead` of it, if any, is done).

    Keyed by the text as stored (redacted: the key is kept too) and the task: a later turn (another process,
    say) that compacts the same old text again finds it, and shows the same marker (the prompt prefix stays
    the same).
    """
    session.save_path.settle(ids=(_ahead(said),))
    return _found_or_stored(session, task, said)


def _found_or_stored(session: ContextSession, task: int | str | None, said: str) -> CallParts | None:
    redactor = session.redactor
    key = text_key(task, said if redactor is None else redactor.redact_text(said))
    found = [p for p in session.call_parts(key, task_id=task) if p.tool_name == ASSISTANT_TEXT]
    if found:
        return found[0]
    saved = session.record_call(ASSISTANT_TEXT, {}, said, task, call_id=key)
    return session.parts_of(saved.id) if saved.stored else None


def store_said_ahead(session: ContextSession, task: int | str | None, said: str) -> None:
    """:func:`stored_said` in the background (the uploads' pool), ahead of a batch that would mark ``said``."""

    def store() -> None:
        try:
            _found_or_stored(session, task, said)  # (not stored_said: it would wait for this very job)
        except Exception as exc:  # (stored when marked, then)
            internal_error("could not store assistant text ahead of a batch", exc)

    context = contextvars.copy_context()  # (tagged as the model call's own would be: its task() block, say)
    session.save_path.uploads.submit(_ahead(said), lambda: context.run(store))


def _ahead(said: str) -> str:
    """What storing assistant text ``said`` ahead of a batch is waited for under."""
    return f"text:{xxhash.xxh3_128_hexdigest(said.encode('utf-8', 'surrogatepass'))}"
