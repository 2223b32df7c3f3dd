"""The history part of the assembler: adding, pinning, reading and expanding messages."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from toolctx.assembly._history import HistorySpan
from toolctx.assembly._render import CONTEXT_ID, SYSTEM_ID
from toolctx.assembly._types import HistoryMessage, Role, ToolCallSpec, any_json, config_error
from toolctx.assembly._working import WorkingState
from toolctx.compaction import output_text
from toolctx.errors import ConfigError

__all__ = ["HistoryMixin", "text_value"]


class HistoryMixin:
    """The history methods of :class:`~toolctx.assembly.ContextAssembler`."""

    _work: WorkingState

    # -- history ---------------------------------------------------------------------------------

    def add_message(
        self,
        role: Role,
        content: str,
        metadata: Mapping[str, Any] | None = None,
        *,
        tool_calls: Iterable[ToolCallSpec | Mapping[str, Any]] = (),
        tool_call_id: str | None = None,
        name: str | None = None,
        pinned: bool = False,
        id: str | None = None,
        current_input: bool = False,
    ) -> HistoryMessage:
        """Append a message to the history and return it (a ``pinned`` one is never compacted).

        ``tool_calls``: an assistant message's calls, as ToolCallSpec or dicts with
        ``id``, ``name`` and ``arguments`` (a dict, or its JSON text).
        ``current_input``: this user message is the turn's input (see :meth:`set_current_input`).
        """
        if current_input and role != "user":
            raise ConfigError(f"the current input is a user message, not a {role!r} one")
        if metadata is not None and not (isinstance(metadata, Mapping) and any_json(dict(metadata))):
            raise ConfigError(
                f"metadata must be a dict of JSON values (str keys, finite numbers), got {metadata!r:.80}"
            )
        message_id = uuid.uuid4().hex if id is None else id
        if (
            message_id in self._work.by_id
            or message_id in (SYSTEM_ID, CONTEXT_ID)
            or message_id.endswith((":marker", ":missing"))
        ):
            raise ConfigError(f"message id {message_id!r} is already in the history (or reserved); ids are unique")
        try:
            message = HistoryMessage(
                id=message_id,
                role=role,
                content=text_value("content", content),
                tool_calls=tuple(_call(c) for c in tool_calls),
                tool_call_id=tool_call_id,
                name=name,
                pinned=pinned,
                metadata=dict(metadata or {}),
                timestamp=time.time(),
            )
        except ValidationError as exc:
            raise config_error("message", exc) from None
        self._work.history.append(message)
        self._work.by_id[message.id] = message
        if current_input:
            self._work.current = message.id
        self._work.events.emit("message_added", message=message)
        return message

    def add_tool_result(self, call_id: str, output: Any, *, error: bool | BaseException = False) -> HistoryMessage:
        """The result of a tool call the history made: stored by a ToolOutputPlugin if one is registered.

        A big output is then shown as a stand-in with its handle; without the
        plugin the output is shown whole (as JSON unless it is a str).
        """
        call = next((c for m in reversed(self._work.history) for c in m.tool_calls if c.id == call_id), None)
        if call is None:
            raise ConfigError(f"no tool call {call_id!r} in the history; add the assistant message that makes it first")
        recorder = next((p for p in self._work.plugins.values() if callable(getattr(p, "record", None))), None)
        if recorder is not None:
            text, meta = recorder.record(call, output, error=error)
        else:
            text, meta = output_text(output), ({"is_error": True} if error else {})
        return self.add_message("tool", text, meta, tool_call_id=call_id, name=call.name)

    def pin(self, message_id: str, pinned: bool = True) -> HistoryMessage:
        """Pin (or unpin) a message already in the history: a pinned message is never compacted."""
        found = self._work.by_id.get(message_id)
        if found is None:
            raise ConfigError(f"no message {message_id!r} in the history")
        if any(message_id in span.message_ids for span in self._work.spans):
            raise ConfigError(f"message {message_id!r} is compacted already; uncompact() its span first")
        updated = found.model_copy(update={"pinned": bool(pinned)})
        self._work.history[self._work.history.index(found)] = self._work.by_id[message_id] = updated
        if pinned:
            for plugin in self._work.plugins.values():
                hook = getattr(plugin, "pinned", None)
                if callable(hook):
                    hook([updated])
        return updated

    def get_history(self) -> list[HistoryMessage]:
        """Every message, compacted or not, as added."""
        return list(self._work.history)

    def get_recent_history(self, count: int) -> list[HistoryMessage]:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"count must be a whole number >= 0, got {count!r:.80}")
        return self._work.history[-count:] if count else []

    def clear_history(self) -> None:
        """Forget every message and compacted span (their stored copies stay in the session)."""
        self._work.history.clear()
        self._work.by_id.clear()
        self._work.spans.clear()
        self._work.current = None
        self._work.events.emit("history_cleared")

    def format_history(self, *, max_chars: int | None = None, include_tools: bool = True) -> str:
        """The history as readable text, one ``role: content`` block per message."""
        lines = []
        for m in self._work.history:
            if m.role == "tool" and not include_tools:
                continue
            text = m.content if max_chars is None or len(m.content) <= max_chars else m.content[:max_chars] + " [...]"
            calls = (
                "".join(f"\n  -> {c.name}({output_text(c.arguments)})" for c in m.tool_calls) if include_tools else ""
            )
            lines.append(f"{m.role}: {text}{calls}")
        return "\n".join(lines)

    @property
    def spans(self) -> list[HistorySpan]:
        """The compacted parts of the history, oldest first."""
        return list(self._work.spans)

    def expand(self, handle: str) -> list[HistoryMessage]:
        """The messages a history marker stands for, whole (from the history, else from the session's copy)."""
        for span in self._work.spans:
            if span.handle == handle and all(i in self._work.by_id for i in span.message_ids):
                return [self._work.by_id[i] for i in span.message_ids]
        pointer_id = handle.removeprefix("ctx:")
        found = self._work.session().load_contexts([pointer_id])
        if not found or not isinstance(found[0].result, list):
            raise ConfigError(f"no compacted history {handle!r} in this conversation or its session")
        return [HistoryMessage.model_validate(m) for m in found[0].result]

    def uncompact(self, handle: str) -> None:
        """Show a compacted span's messages again from the next call on (they may be compacted again)."""
        kept = [s for s in self._work.spans if s.handle != handle]
        if len(kept) == len(self._work.spans):
            raise ConfigError(f"no compacted span {handle!r}; the spans are {[s.handle for s in self._work.spans]}")
        self._work.spans = kept


def text_value(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{what} must be a str, got {type(value).__name__}: {value!r:.80}")
    return value


def _call(call: ToolCallSpec | Mapping[str, Any]) -> ToolCallSpec:
    if isinstance(call, ToolCallSpec):
        return call
    if not isinstance(call, Mapping):
        raise ConfigError(f"a tool call is a ToolCallSpec or a dict with id, name and arguments, got {call!r:.80}")
    arguments = call.get("arguments", call.get("args", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            arguments = {"_raw": arguments}  # the model wrote invalid JSON: kept as it came
    try:
        return ToolCallSpec.model_validate({"id": call.get("id"), "name": call.get("name"), "arguments": arguments})
    except ValidationError as exc:
        raise config_error("tool call", exc) from None
