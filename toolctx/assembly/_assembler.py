"""ContextAssembler: one object that prepares every model call (seed name: UnifiedContextManager)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from toolctx._internal import internal_error
from toolctx.assembly._events import Event, Events
from toolctx.assembly._history import HistorySpan
from toolctx.assembly._measure import Measure, resolve_counter
from toolctx.assembly._pipeline import Draft, measure, prepare
from toolctx.assembly._plugins import as_plugin
from toolctx.assembly._render import CONTEXT_ID, SYSTEM_ID, PreparedContext
from toolctx.assembly._state import AssemblerState, restore, restore_plugin, state_of
from toolctx.assembly._strategies import Strategy, resolve_strategy
from toolctx.assembly._tool_outputs import resolve_session
from toolctx.assembly._types import (
    AssemblerConfig,
    ContextBudget,
    HistoryMessage,
    Role,
    ToolCallSpec,
    any_json,
    config_error,
)
from toolctx.errors import ConfigError
from toolctx.sessions import ContextSession
from toolctx.standins import output_text
from toolctx.tokens import TokenCounter

__all__ = ["ContextAssembler", "Summarizer"]

Summarizer = Callable[[list[HistoryMessage]], Any]
"""A function (plain or async) writing a short summary (str) of messages leaving the history."""


class ContextAssembler:
    """Prepares every model call: system prompt, instructions, history, current input and plugins, within a budget.

    ``await prepare()`` builds the context, measures it exactly with ``counter``
    (the exact o200k counter when available, else the estimate), emits
    ``budget_warning`` / ``budget_critical``, compacts as the strategy says
    (highest priority first, measuring again after each step) and returns a
    :class:`PreparedContext` that renders for OpenAI, Anthropic or LangChain. The
    full history is always kept (:meth:`get_history`); compaction changes only
    what the model is shown, and what leaves the prompt is stored in the session
    and read back by handle (:meth:`expand`, or the model's ``read_context``).

    Options: an :class:`AssemblerConfig` or its fields by keyword. ``strategy``:
    ``"proactive"`` (default), ``"lazy"``, ``"adaptive"`` or a function.
    ``session``: where compacted history is stored (the current session by
    default). ``summarizer``: a function of the messages leaving the history that
    returns a summary, shown with their marker (never instead of the stored copy).
    ``tools``: tool definitions in OpenAI's function format, counted in the budget.
    """

    def __init__(
        self,
        config: AssemblerConfig | Mapping[str, Any] | None = None,
        *,
        strategy: str | Strategy = "proactive",
        counter: TokenCounter | str | None = None,
        session: ContextSession | Callable[[], ContextSession] | None = None,
        plugins: Iterable[Any] = (),
        tools: Sequence[Mapping[str, Any]] = (),
        summarizer: Summarizer | None = None,
        system_prompt: str = "",
        instructions: str = "",
        **options: Any,
    ) -> None:
        if config is not None and options:
            raise ConfigError("pass either an AssemblerConfig or its options by keyword, not both")
        self._config = self._checked_config(config if config is not None else options)
        self._strategy: Strategy = resolve_strategy(strategy)
        self._measure = Measure(resolve_counter(counter))
        self._session = resolve_session(session)
        if summarizer is not None and not callable(summarizer):
            raise ConfigError(f"summarizer must be a function of a list of messages, got {summarizer!r:.80}")
        self._summarizer = summarizer
        self._events = Events()
        self._system_prompt = self._instructions = ""
        self._history: list[HistoryMessage] = []
        self._by_id: dict[str, HistoryMessage] = {}
        self._current: str | None = None
        self._spans: list[HistorySpan] = []
        self._plugins: dict[str, Any] = {}
        self._orphans: dict[str, Any] = {}  # states of plugins not registered here, kept for a later one
        self._tools: list[dict[str, Any]] = []
        self._last: PreparedContext | None = None
        self._cached: dict[str, HistoryMessage] = {}
        self._metrics_prepares = self._metrics_compactions = self._metrics_freed = 0
        self._metrics_seconds = 0.0
        self.conversation_id = uuid.uuid4().hex
        self.set_system_prompt(system_prompt)
        self.set_instructions(instructions)
        self.set_tools(tools)
        for plugin in plugins:
            self.register_plugin(plugin)

    def __repr__(self) -> str:
        plugins = list(self._plugins)
        return f"ContextAssembler(messages={len(self._history)}, plugins={plugins}, limit={self._config.limit:,})"

    @staticmethod
    def _checked_config(config: AssemblerConfig | Mapping[str, Any]) -> AssemblerConfig:
        if isinstance(config, AssemblerConfig):
            return config
        try:
            return AssemblerConfig.model_validate(dict(config))
        except ValidationError as exc:
            raise config_error("assembler option", exc) from None

    # -- events ------------------------------------------------------------------------------

    def on(self, event: str, listener: Callable[[Event], Any]) -> Callable[[Event], Any]:
        """Call ``listener(event)`` on each ``event`` (see :data:`EVENTS`); returns the listener."""
        return self._events.on(event, listener)

    def off(self, event: str, listener: Callable[[Event], Any]) -> None:
        self._events.off(event, listener)

    def _plugin_failed(self, plugin: str, method: str, exc: Exception) -> None:
        internal_error(f"plugin {plugin!r}: {method}() raised; the context was prepared without it", exc)
        self._events.emit("plugin_error", plugin=plugin, method=method, error=exc)

    # -- the core parts ------------------------------------------------------------------------

    def set_system_prompt(self, prompt: str) -> None:
        """The system prompt (never compacted; first in every prepared context)."""
        self._system_prompt = _text("system_prompt", prompt)

    def get_system_prompt(self) -> str:
        return self._system_prompt

    def set_instructions(self, instructions: str) -> None:
        """Instructions shown after the system prompt (never compacted)."""
        self._instructions = _text("instructions", instructions)

    def get_instructions(self) -> str:
        return self._instructions

    def set_current_input(self, text: str) -> HistoryMessage:
        """This turn's input: a user message added to the history and never compacted while it is current.

        If the current input is still the last message (nothing answered it yet) it is replaced.
        """
        text = _text("input", text)
        last = self._history[-1] if self._history else None
        if last is not None and last.id == self._current:
            self._history[-1] = self._by_id[last.id] = last.model_copy(update={"content": text})
            return self._history[-1]
        return self.add_message("user", text, current_input=True)

    def get_current_input(self) -> str:
        found = self._by_id.get(self._current) if self._current is not None else None
        return found.content if found is not None else ""

    def set_tools(self, tools: Sequence[Mapping[str, Any]]) -> None:
        """Tool definitions (OpenAI's function format) sent with every call and counted in the budget."""
        checked = []
        for tool in tools:
            if not isinstance(tool, Mapping) or not isinstance(tool.get("function", tool).get("name"), str):
                raise ConfigError(
                    'a tool definition is a dict like {"type": "function", "function": {"name": ...}}, '
                    f"got {tool!r:.80}"
                )
            checked.append(dict(tool))
        self._tools = checked

    def get_tools(self) -> list[dict[str, Any]]:
        return [dict(t) for t in self._tools]

    def _system_message(self) -> HistoryMessage | None:
        text = "\n\n".join(t for t in (self._system_prompt, self._instructions) if t)
        return self._cached_message(SYSTEM_ID, "system", text) if text else None

    def _context_message(self, text: str) -> HistoryMessage:
        return self._cached_message(CONTEXT_ID, self._config.context_role, text)

    def _cached_message(self, message_id: str, role: Role, text: str) -> HistoryMessage:
        found = self._cached.get(message_id)
        if found is None or found.content != text or found.role != role:
            found = self._cached[message_id] = HistoryMessage(id=message_id, role=role, content=text)
        return found

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
            message_id in self._by_id
            or message_id in (SYSTEM_ID, CONTEXT_ID)
            or message_id.endswith((":marker", ":missing"))
        ):
            raise ConfigError(f"message id {message_id!r} is already in the history (or reserved); ids are unique")
        try:
            message = HistoryMessage(
                id=message_id,
                role=role,
                content=_text("content", content),
                tool_calls=tuple(_call(c) for c in tool_calls),
                tool_call_id=tool_call_id,
                name=name,
                pinned=pinned,
                metadata=dict(metadata or {}),
                timestamp=time.time(),
            )
        except ValidationError as exc:
            raise config_error("message", exc) from None
        self._history.append(message)
        self._by_id[message.id] = message
        if current_input:
            self._current = message.id
        self._events.emit("message_added", message=message)
        return message

    def add_tool_result(self, call_id: str, output: Any, *, error: bool | BaseException = False) -> HistoryMessage:
        """The result of a tool call the history made: stored by a ToolOutputPlugin if one is registered.

        A big output is then shown as a stand-in with its handle; without the
        plugin the output is shown whole (as JSON unless it is a str).
        """
        call = next((c for m in reversed(self._history) for c in m.tool_calls if c.id == call_id), None)
        if call is None:
            raise ConfigError(f"no tool call {call_id!r} in the history; add the assistant message that makes it first")
        recorder = next((p for p in self._plugins.values() if callable(getattr(p, "record", None))), None)
        if recorder is not None:
            text, meta = recorder.record(call, output, error=error)
        else:
            text, meta = output_text(output), ({"is_error": True} if error else {})
        return self.add_message("tool", text, meta, tool_call_id=call_id, name=call.name)

    def pin(self, message_id: str, pinned: bool = True) -> HistoryMessage:
        """Pin (or unpin) a message already in the history: a pinned message is never compacted."""
        found = self._by_id.get(message_id)
        if found is None:
            raise ConfigError(f"no message {message_id!r} in the history")
        if any(message_id in span.message_ids for span in self._spans):
            raise ConfigError(f"message {message_id!r} is compacted already; uncompact() its span first")
        updated = found.model_copy(update={"pinned": bool(pinned)})
        self._history[self._history.index(found)] = self._by_id[message_id] = updated
        if pinned:
            for plugin in self._plugins.values():
                hook = getattr(plugin, "pinned", None)
                if callable(hook):
                    hook([updated])
        return updated

    def get_history(self) -> list[HistoryMessage]:
        """Every message, compacted or not, as added."""
        return list(self._history)

    def get_recent_history(self, count: int) -> list[HistoryMessage]:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"count must be a whole number >= 0, got {count!r:.80}")
        return self._history[-count:] if count else []

    def clear_history(self) -> None:
        """Forget every message and compacted span (their stored copies stay in the session)."""
        self._history.clear()
        self._by_id.clear()
        self._spans.clear()
        self._current = None
        self._events.emit("history_cleared")

    def format_history(self, *, max_chars: int | None = None, include_tools: bool = True) -> str:
        """The history as readable text, one ``role: content`` block per message."""
        lines = []
        for m in self._history:
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
        return list(self._spans)

    def expand(self, handle: str) -> list[HistoryMessage]:
        """The messages a history marker stands for, whole (from the history, else from the session's copy)."""
        for span in self._spans:
            if span.handle == handle and all(i in self._by_id for i in span.message_ids):
                return [self._by_id[i] for i in span.message_ids]
        pointer_id = handle.removeprefix("ctx:")
        found = self._session().load_contexts([pointer_id])
        if not found or not isinstance(found[0].result, list):
            raise ConfigError(f"no compacted history {handle!r} in this conversation or its session")
        return [HistoryMessage.model_validate(m) for m in found[0].result]

    def uncompact(self, handle: str) -> None:
        """Show a compacted span's messages again from the next call on (they may be compacted again)."""
        kept = [s for s in self._spans if s.handle != handle]
        if len(kept) == len(self._spans):
            raise ConfigError(f"no compacted span {handle!r}; the spans are {[s.handle for s in self._spans]}")
        self._spans = kept

    # -- plugins ---------------------------------------------------------------------------------

    def register_plugin(
        self, plugin: Any, *, name: str | None = None, priority: int | None = None, compactable: bool | None = None
    ) -> Any:
        """Add a plugin (an object, or a function returning the content; name, priority and compactable then apply).

        A state kept for a plugin of this name (restored before it was registered) is restored into it.
        """
        plugin = as_plugin(plugin, name=name, priority=priority, compactable=compactable)
        if plugin.name in self._plugins:
            raise ConfigError(
                f"a plugin named {plugin.name!r} is already registered; unregister it or pick another name"
            )
        self._plugins[plugin.name] = plugin
        if plugin.name in self._orphans:
            restore_plugin(self, plugin, self._orphans.pop(plugin.name))
        return plugin

    def unregister_plugin(self, name: str) -> None:
        if self._plugins.pop(name, None) is None:
            raise ConfigError(f"no plugin named {name!r}; registered: {list(self._plugins)}")

    def get_plugin(self, name: str) -> Any:
        return self._plugins.get(name)

    def list_plugins(self) -> list[str]:
        return list(self._plugins)

    # -- preparing -------------------------------------------------------------------------------

    async def prepare(self) -> PreparedContext:
        """The context for the next model call, compacted as needed (see the class docstring)."""
        return await prepare(self, force=False)

    async def compact(self) -> PreparedContext:
        """Compact now, to the low-water mark, whatever the strategy says; the context as it then is."""
        return await prepare(self, force=True)

    def get_budget(self) -> ContextBudget:
        """The budget now: the last call's plugins and tools, the history as it is now (new messages as added)."""
        last = self._last
        shown = {m.id: m for m in last.history} if last is not None else {}
        view = [shown.get(m.id, m) for m in self._history]
        from toolctx.assembly._pairing import paired

        draft = Draft(
            paired(view)[0],
            {c.name: c for c in (last.components if last else [])},
            list(last.tools if last else self._tools),
        )
        return measure(self, draft)

    # -- configuration ---------------------------------------------------------------------------

    def set_strategy(self, strategy: str | Strategy) -> None:
        self._strategy = resolve_strategy(strategy)

    def get_strategy(self) -> Strategy:
        return self._strategy

    def update_config(self, changes: Mapping[str, Any] | None = None, **options: Any) -> AssemblerConfig:
        """Change some options (a dict or keywords); the others keep their values. Returns the new options."""
        merged = {**self._config.model_dump(), **dict(changes or {}), **options}
        self._config = self._checked_config(merged)
        return self._config

    def get_config(self) -> AssemblerConfig:
        return self._config

    # -- state -----------------------------------------------------------------------------------

    def get_state(self) -> AssemblerState:
        """The state to save (``.model_dump_json()``) and restore later, here or in another process."""
        return state_of(self)

    def restore_state(self, state: AssemblerState | Mapping[str, Any] | str | bytes) -> None:
        """Carry on from a saved state (the model, its dict or its JSON); checked whole before anything changes.

        A plugin state with no plugin of that name here is kept (and in the next
        ``get_state()``) with a :class:`~toolctx.ToolctxWarning`; registering such a
        plugin later restores it. A state of another version raises
        :class:`StateVersionError`, changing nothing.
        """
        restore(self, state)

    # -- introspection ---------------------------------------------------------------------------

    def estimate_tokens(self, content: Any) -> int:
        """Tokens of ``content`` (text, or anything as JSON) with the assembler's counter."""
        return self._measure.counter.count(output_text(content))

    def get_utilization(self) -> float:
        """The percentage of the limit the context uses now (over 100 when it would not fit)."""
        return 100.0 * self.get_budget().utilization

    def get_metrics(self) -> dict[str, Any]:
        """Counts and sizes: prepares, compactions, tokens freed, messages kept and shown, spans, plugins."""
        last = self._last
        return {
            "prepares": self._metrics_prepares,
            "compactions": self._metrics_compactions,
            "tokens_freed": self._metrics_freed,
            "history_messages": len(self._history),
            "shown_messages": len(last.history) if last else len(self._history),
            "compacted_spans": len(self._spans),
            "compacted_messages": sum(len(s.message_ids) for s in self._spans),
            "plugins": list(self._plugins),
            "last_budget": last.budget.model_dump() if last else None,
            "last_prepare_seconds": self._metrics_seconds,
            "counter": self._measure.counter.name,
        }


def _text(what: str, value: object) -> str:
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
        import json

        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            arguments = {"_raw": arguments}  # the model wrote invalid JSON: kept as it came
    try:
        return ToolCallSpec.model_validate({"id": call.get("id"), "name": call.get("name"), "arguments": arguments})
    except ValidationError as exc:
        raise config_error("tool call", exc) from None
