"""ContextAssembler: one object that prepares every model call (seed name: UnifiedContextManager)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from toolctx._internal import internal_error
from toolctx.assembly._conversation import HistoryMixin, text_value
from toolctx.assembly._events import Event, Events
from toolctx.assembly._history import HistorySpan
from toolctx.assembly._measure import Measure, resolve_counter
from toolctx.assembly._pairing import Pairing, paired
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
    config_error,
)
from toolctx.compaction import output_text
from toolctx.errors import ConfigError
from toolctx.sessions import ContextSession
from toolctx.tokens import TokenCounter

__all__ = ["ContextAssembler", "Summarizer"]

Summarizer = Callable[[list[HistoryMessage]], Any]
"""A function (plain or async) writing a short summary (str) of messages leaving the history."""


class ContextAssembler(HistoryMixin):
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
        self._pairing = Pairing()  # the view paired, redone only for new messages
        self._current_at = 0  # where the current input was in the last prepared history
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
        self._system_prompt = text_value("system_prompt", prompt)

    def get_system_prompt(self) -> str:
        return self._system_prompt

    def set_instructions(self, instructions: str) -> None:
        """Instructions shown after the system prompt (never compacted)."""
        self._instructions = text_value("instructions", instructions)

    def get_instructions(self) -> str:
        return self._instructions

    def set_current_input(self, text: str) -> HistoryMessage:
        """This turn's input: a user message added to the history and never compacted while it is current.

        If the current input is still the last message (nothing answered it yet) it is replaced.
        """
        text = text_value("input", text)
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
