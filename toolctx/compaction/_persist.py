"""Storing a tool call from an adapter, and what the model is shown of its output right away."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import is_
from typing import Any, Generic, TypeVar

from toolctx._internal import internal_error
from toolctx._naming import handle
from toolctx.compaction._notes import notes
from toolctx.compaction._settings import CompactionSettings, pays_for_cache_break
from toolctx.models import ContextPointer, ErrorInfo, StorageKind
from toolctx.sessions import ContextSession
from toolctx.standins import stand_in, stored_text
from toolctx.tokens import estimate_tokens

__all__ = ["PrefixSize", "SavedCall", "estimated", "estimated_once", "persist_call", "shown_output"]

_KEPT = 512  # recent texts whose estimate is remembered
_KEPT_CHARS = 4096  # ...if they are this short (so at most about 2 MB is held)
_estimates: dict[str | bytes, int] = {}


def estimated(text: str | bytes) -> int:
    """:func:`~toolctx.tokens.estimate_tokens` of ``text``, remembered for a few hundred recent short texts.

    The adapters and the policy estimate the same text several times: an output
    when the tool hook decides how to show it and again when the next model call
    reads it, a tool's name and its arguments on every call that repeats them.
    """
    if len(text) > _KEPT_CHARS:
        return estimate_tokens(text)
    found = _estimates.get(text)
    if found is None:
        if len(_estimates) >= _KEPT:
            _estimates.clear()  # (dict operations are atomic: threads sharing it at worst estimate again)
        found = _estimates[text] = estimate_tokens(text)
    return found


S = TypeVar("S")
T = TypeVar("T")

_PARTS_KEPT = 256  # tools and system prompts whose estimate is remembered
_parts: dict[int, tuple[object, int]] = {}


def estimated_once(part: T, text_of: Callable[[T], str | bytes]) -> int:
    """The estimate of ``text_of(part)``, what the model is sent of ``part`` (a tool, a system prompt), once per part.

    The same tool and system prompt objects come back on every model call, and
    turning a tool into its definition costs more than estimating it.
    """
    found = _parts.get(id(part))
    if found is not None and found[0] is part:
        return found[1]
    if len(_parts) >= _PARTS_KEPT:
        _parts.clear()
    tokens = estimate_tokens(text_of(part))
    _parts[id(part)] = (part, tokens)
    return tokens


class PrefixSize(Generic[S, T]):
    """The estimated tokens a model call sends before the messages: its system prompt and tool definitions.

    That is what the first stand-in makes the provider read again uncached: it
    brings ``read_context`` into the tool list, which comes first in the prompt.
    ``system_text`` and ``tool_text`` give what the model is sent of each (a
    tool's text may be empty: ``read_context`` itself, or a tool the provider
    defines). The last system prompt and tools are remembered: a conversation
    sends the same objects on every call.
    """

    def __init__(self, system_text: Callable[[S], str | bytes], tool_text: Callable[[T], str | bytes]) -> None:
        self.system_text = system_text
        self.tool_text = tool_text
        self._last: tuple[S | None, tuple[T, ...], int] | None = None

    def __call__(self, system: S | None, tools: Sequence[T]) -> int:
        last = self._last
        if last is not None and last[0] is system and len(last[1]) == len(tools) and all(map(is_, last[1], tools)):
            return last[2]
        tokens = 0 if system is None else estimated_once(system, self.system_text)
        tokens += sum(estimated_once(tool, self.tool_text) for tool in tools)
        self._last = (system, tuple(tools), tokens)
        return tokens


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
        return SavedCall(record.id, record.storage is not StorageKind.NONE, record.is_error)
    except Exception as exc:
        internal_error(f"could not store a call of tool {tool_name!r}", exc)
        return None


def shown_output(
    settings: CompactionSettings, session: ContextSession, pointer: SavedCall | ContextPointer | None, text: str
) -> str | None:
    """The stand-in the model gets instead of a big output ``text``, or None to show the output as it is.

    Only a stored, non-error output gets one, cut from the stored copy (what
    ``read_context`` returns), so a failure to store always shows the full output.
    The conversation's first stand-in brings ``read_context`` into the tool list,
    which breaks the provider's prompt cache for the whole prompt once: it is made
    only for an output that frees enough to pay for that
    (:func:`pays_for_cache_break`).
    """
    if pointer is None or not pointer.stored or pointer.is_error:
        return None
    tokens = estimated(text)
    if tokens <= settings.max_output_tokens:
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
