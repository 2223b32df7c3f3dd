"""Storing a tool call from an adapter, and what the model is shown of its output right away."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolctx._internal import internal_error
from toolctx._naming import handle
from toolctx.compaction._notes import notes
from toolctx.compaction._settings import CompactionSettings, pays_for_cache_break
from toolctx.models import ContextPointer, ErrorInfo, StorageKind
from toolctx.sessions import ContextSession
from toolctx.standins import stand_in, stored_text
from toolctx.tokens import estimate_tokens

__all__ = ["SavedCall", "estimated", "over_limit", "persist_call", "queue_call", "shown_output", "shown_whole"]

_KEPT = 512  # recent texts whose estimate is remembered
_KEPT_CHARS = 4096  # ...if they are this short (so at most about 2 MB is held)
_estimates: dict[str | bytes, int] = {}


def estimated(text: str | bytes) -> int:
    """:func:`~toolctx.tokens.estimate_tokens` of ``text``, remembered for a few hundred recent short texts.

    The adapters and the policy estimate the same text several times: an output
    when the tool hook decides how to show it and again when the next model call
    reads it, a tool's name and its arguments on every call that repeats them.
    """
    if not _remembered(text):
        return estimate_tokens(text)
    found = _estimates.get(text)
    if found is None:
        if len(_estimates) >= _KEPT:
            _estimates.clear()  # (dict operations are atomic: threads sharing it at worst estimate again)
        found = _estimates[text] = estimate_tokens(text)
    return found


def _remembered(text: str | bytes) -> bool:
    """Whether :func:`estimated` remembers the estimate of ``text`` (it is short enough)."""
    return len(text) <= _KEPT_CHARS


def _short_ascii(settings: CompactionSettings, text: str) -> bool:
    """Whether ``text`` is certainly within ``max_output_tokens`` without an estimate: never more tokens than
    bytes, so ASCII of no more characters than that."""
    return len(text) <= settings.max_output_tokens and text.isascii()


@dataclass(frozen=True, slots=True)
class SavedCall:
    """A call :func:`persist_call` stored: its id, and what deciding how to show its output needs.

    Lighter than the :class:`~toolctx.ContextPointer` that
    :meth:`~toolctx.ContextSession.save_context` returns, which takes longer to build than
    storing a small call; ``session.get_pointer(saved.id)`` gives that pointer.
    """

    id: str
    stored: bool  # False: the output could not be written, only the call was recorded
    is_error: bool
    tool: str = ""  # the tool's name, as the adapter gave it

    @property
    def handle(self) -> str:
        """The handle the model is shown: ``ctx:<id>``."""
        return handle(self.id)


def persist_call(
    session: ContextSession,
    tool_name: str,
    args: Mapping[str, Any],
    result: Any,
    *,
    error: BaseException | ErrorInfo | None = None,
    call_id: str | None = None,
    task_id: int | str | None = None,
) -> SavedCall | None:
    """Store one call, tagged with the session's latest question; None (logged and warned) if that fails.

    Every adapter path stores through here, so storing never breaks the tool.
    """
    try:
        query_id = notes(session).query_id
        # (the session's own save path, without the pointer save_context builds for its callers)
        record = session._save(
            tool_name, args, result, task_id, query_id, error=error, call_id=None if call_id is None else str(call_id)
        )
        return SavedCall(record.id, record.storage is not StorageKind.NONE, record.is_error, tool_name)
    except Exception as exc:
        internal_error(f"could not store a call of tool {tool_name!r}", exc)
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
        session._save_later(
            tool_name, args, result, task_id, query_id, call_id=None if call_id is None else str(call_id)
        )
        return True
    except Exception as exc:
        internal_error(f"could not store a call of tool {tool_name!r}", exc)
        return False


def shown_whole(settings: CompactionSettings, text: str) -> bool:
    """Whether an output is certainly shown as it is, being estimated at most ``max_output_tokens``.

    ASCII of no more characters than that needs no estimate (never more tokens
    than bytes). Otherwise a text of at most 4,096 characters is estimated (the
    estimate is remembered for the model call that reads it); a longer one gives
    False without an estimate, and :func:`shown_output`, which estimates it once,
    decides (it may still show it whole).
    """
    if _short_ascii(settings, text):
        return True
    return _remembered(text) and estimated(text) <= settings.max_output_tokens


def over_limit(settings: CompactionSettings, tool: str, text: str) -> int:
    """The estimated tokens of an output that the rules give a stand-in (0 if they show it as it is).

    Over ``max_output_tokens``, longer than the ``head_chars + tail_chars`` its
    stand-in would keep (else it would show it all), not of ``exclude_tools``.
    Whether the first stand-in pays for bringing ``read_context`` in is
    :func:`shown_output`'s to decide.
    """
    if _short_ascii(settings, text) or len(text) <= settings.head_chars + settings.tail_chars:
        return 0
    if tool in settings.exclude_tools:
        return 0
    tokens = estimated(text)
    return tokens if tokens > settings.max_output_tokens else 0


def shown_output(
    settings: CompactionSettings, session: ContextSession, pointer: SavedCall | ContextPointer | None, text: str
) -> str | None:
    """The stand-in the model gets instead of a big output ``text``, or None to show the output as it is.

    Only a stored, non-error output of a tool not in ``exclude_tools`` gets one,
    cut from the stored copy (what ``read_context`` returns), so a failure to
    store always shows the full output; so does an output of at most
    ``head_chars + tail_chars`` characters, which its stand-in would show whole
    (dense text over ``max_output_tokens`` in fewer characters: digits, CJK).
    The conversation's first stand-in brings ``read_context`` into the tool list,
    which breaks the provider's prompt cache for the whole prompt once: it is made
    only for an output that frees enough to pay for that
    (:func:`pays_for_cache_break`).
    """
    if pointer is None or not pointer.stored or pointer.is_error:
        return None
    tokens = over_limit(settings, pointer.tool if isinstance(pointer, SavedCall) else pointer.tool_name, text)
    if not tokens:
        return None
    session_notes = notes(session)
    freed = tokens - settings.stand_in_tokens
    broken = session_notes.shown_tokens + session_notes.prefix_tokens  # (the tool list changes: all of it)
    if not session_notes.offer_read_context and not pays_for_cache_break(
        freed, broken, session_notes.model_calls, settings.cached_price
    ):
        return None
    try:
        found = session.load_contexts([pointer.id])
    except Exception as exc:
        internal_error(f"could not read {pointer.handle} back; the model gets the whole output", exc)
        return None
    if not found:
        return None
    session_notes.offer_read_context = True
    return stand_in(found[0], stored_text(found[0]), settings.head_chars, settings.tail_chars)
