"""The assembler's working state: what it holds between calls, in one object its parts share openly.

A :class:`~toolctx.assembly.ContextAssembler` owns one :class:`WorkingState` and
hands it to the modules that do the work (preparing a call, saving and restoring
the state); they read and change its fields, never the assembler's own members.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolctx._internal import internal_error
from toolctx.assembly._events import Events
from toolctx.assembly._history import HistorySpan
from toolctx.assembly._measure import Measure
from toolctx.assembly._pairing import Pairing
from toolctx.assembly._render import CONTEXT_ID, SYSTEM_ID, PreparedContext
from toolctx.assembly._strategies import ContextStrategy
from toolctx.assembly._types import AssemblerConfig, HistoryMessage, Role
from toolctx.sessions import ContextSession

__all__ = ["Metrics", "Summarizer", "WorkingState"]

Summarizer = Callable[[list[HistoryMessage]], Any]
"""A function (plain or async) writing a short summary (str) of messages leaving the history."""


@dataclass
class Metrics:
    """Counts kept across model calls (the assembler's ``get_metrics()`` reports them)."""

    prepares: int = 0
    compactions: int = 0
    freed: int = 0
    seconds: float = 0.0  # the last prepare's


@dataclass(eq=False)
class WorkingState:
    """Everything one assembler works with; each field is what its name says, shared by the assembler's modules."""

    config: AssemblerConfig
    strategy: ContextStrategy
    measure: Measure
    session: Callable[[], ContextSession]
    summarizer: Summarizer | None = None
    events: Events = field(default_factory=Events)
    conversation_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    system_prompt: str = ""
    instructions: str = ""
    history: list[HistoryMessage] = field(default_factory=list)
    by_id: dict[str, HistoryMessage] = field(default_factory=dict)
    current: str | None = None  # the id of the current input
    spans: list[HistorySpan] = field(default_factory=list)
    plugins: dict[str, Any] = field(default_factory=dict)
    orphans: dict[str, Any] = field(default_factory=dict)  # states of plugins not registered here, kept for later
    tools: list[dict[str, Any]] = field(default_factory=list)
    last: PreparedContext | None = None
    cached: dict[str, HistoryMessage] = field(default_factory=dict)
    pairing: Pairing = field(default_factory=Pairing)  # the view paired, redone only for new messages
    current_at: int = 0  # where the current input was in the last prepared history
    metrics: Metrics = field(default_factory=Metrics)

    def plugin_failed(self, plugin: str, method: str, exc: Exception) -> None:
        """Report a plugin method that raised (logged, warned, ``plugin_error`` event); the call goes on without it."""
        internal_error(f"plugin {plugin!r}: {method}() raised; the context was prepared without it", exc)
        self.events.emit("plugin_error", plugin=plugin, method=method, error=exc)

    def system_message(self) -> HistoryMessage | None:
        """The system prompt and instructions as the first message, or None when both are empty."""
        text = "\n\n".join(t for t in (self.system_prompt, self.instructions) if t)
        return self.cached_message(SYSTEM_ID, "system", text) if text else None

    def context_message(self, text: str) -> HistoryMessage:
        """The message carrying the plugins' components."""
        return self.cached_message(CONTEXT_ID, self.config.context_role, text)

    def cached_message(self, message_id: str, role: Role, text: str) -> HistoryMessage:
        """The same message object while its text and role stay the same (so it is counted once)."""
        found = self.cached.get(message_id)
        if found is None or found.content != text or found.role != role:
            found = self.cached[message_id] = HistoryMessage(id=message_id, role=role, content=text)
        return found
