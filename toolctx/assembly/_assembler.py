"""ContextAssembler: one object that prepares every model call (seed name: UnifiedContextManager)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from toolctx.assembly._conversation import HistoryMixin, text_value
from toolctx.assembly._events import Event
from toolctx.assembly._measure import Measure
from toolctx.assembly._pipeline import budget_now, prepare
from toolctx.assembly._plugins import as_plugin
from toolctx.assembly._render import PreparedContext
from toolctx.assembly._state import AssemblerState, restore, restore_plugin, state_of
from toolctx.assembly._strategies import ContextStrategy, resolve_strategy
from toolctx.assembly._tool_outputs import ToolOutputPlugin, resolve_session
from toolctx.assembly._types import AssemblerConfig, ContextBudget, HistoryMessage, config_error, seed_names
from toolctx.assembly._working import Summarizer, WorkingState
from toolctx.compaction import output_text
from toolctx.errors import ConfigError
from toolctx.sessions import ContextSession
from toolctx.tokens import TokenCounter, resolve_counter

__all__ = ["ContextAssembler"]


class ContextAssembler(HistoryMixin):
    """Prepares every model call: system prompt, instructions, history, current input and plugins, within a budget.

    ``await prepare()`` builds the context, counts it as
    :func:`toolctx.tokens.count_request` counts the OpenAI request it prepares,
    with ``counter`` (the exact o200k counter when available, else the estimate),
    emits
    ``budget_warning`` / ``budget_critical``, compacts as the strategy says
    (highest priority first, measuring again after each step) and returns a
    :class:`PreparedContext` that renders for OpenAI, Anthropic or LangChain. The
    full history is always kept (:meth:`get_history`); compaction changes only
    what the model is shown, and what leaves the prompt is stored in the session
    and read back by handle (:meth:`expand`, or the model's ``read_context``).

    Options: an :class:`AssemblerConfig` or its fields by keyword (seed 004's
    ``max_context_tokens`` is another name for ``max_tokens``). ``strategy``:
    ``"proactive"`` (default), ``"lazy"``, ``"adaptive"`` or your own
    :data:`~toolctx.assembly.ContextStrategy` function.
    ``session``: where compacted history is stored (the current session by
    default). ``summarizer``: a function of the messages leaving the history that
    returns a summary, shown with their marker (never instead of the stored copy).
    ``tools``: tool definitions in OpenAI's function format, counted in the budget.
    """

    def __init__(
        self,
        config: AssemblerConfig | Mapping[str, Any] | None = None,
        *,
        strategy: str | ContextStrategy = "proactive",
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
        if summarizer is not None and not callable(summarizer):
            raise ConfigError(f"summarizer must be a function of a list of messages, got {summarizer!r:.80}")
        self._work = WorkingState(
            config=self._checked_config(config if config is not None else options),
            strategy=resolve_strategy(strategy),
            measure=Measure(resolve_counter(counter)),
            session=resolve_session(session),
            summarizer=summarizer,
        )
        self.set_system_prompt(system_prompt)
        self.set_instructions(instructions)
        self.set_tools(tools)
        for plugin in plugins:
            self.register_plugin(plugin)

    def __repr__(self) -> str:
        w = self._work
        return f"ContextAssembler(messages={len(w.history)}, plugins={list(w.plugins)}, limit={w.config.limit:,})"

    @property
    def conversation_id(self) -> str:
        """This conversation's id: random for a new assembler, the saved one after :meth:`restore_state`."""
        return self._work.conversation_id

    @conversation_id.setter
    def conversation_id(self, value: str) -> None:
        self._work.conversation_id = text_value("conversation_id", value)
        self._join()

    def _join(self) -> None:
        """The tool-output plugins serve this conversation: store and read under its id, as the history does."""
        for plugin in self._work.plugins.values():
            if isinstance(plugin, ToolOutputPlugin):
                plugin.join(self._work.conversation_id)

    @staticmethod
    def _checked_config(config: AssemblerConfig | Mapping[str, Any]) -> AssemblerConfig:
        if isinstance(config, AssemblerConfig):
            return config
        try:
            return AssemblerConfig.model_validate(seed_names(dict(config)))
        except ValidationError as exc:
            raise config_error("assembler option", exc) from None

    # -- events ------------------------------------------------------------------------------

    def on(self, event: str, listener: Callable[[Event], Any]) -> Callable[[Event], Any]:
        """Call ``listener(event)`` on each ``event`` (see :data:`EVENTS`); returns the listener."""
        return self._work.events.on(event, listener)

    def off(self, event: str, listener: Callable[[Event], Any]) -> None:
        self._work.events.off(event, listener)

    # -- the core parts ------------------------------------------------------------------------

    def set_system_prompt(self, prompt: str) -> None:
        """The system prompt (never compacted; first in every prepared context)."""
        self._work.system_prompt = text_value("system_prompt", prompt)

    def get_system_prompt(self) -> str:
        return self._work.system_prompt

    def set_instructions(self, instructions: str) -> None:
        """Instructions shown after the system prompt (never compacted)."""
        self._work.instructions = text_value("instructions", instructions)

    def get_instructions(self) -> str:
        return self._work.instructions

    def set_current_input(self, text: str) -> HistoryMessage:
        """This turn's input: a user message added to the history and never compacted while it is current.

        If the current input is still the last message (nothing answered it yet) it is replaced.
        """
        text = text_value("input", text)
        last = self._work.history[-1] if self._work.history else None
        if last is not None and last.id == self._work.current:
            self._work.history[-1] = self._work.by_id[last.id] = last.model_copy(update={"content": text})
            return self._work.history[-1]
        return self.add_message("user", text, current_input=True)

    def get_current_input(self) -> str:
        found = self._work.by_id.get(self._work.current) if self._work.current is not None else None
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
        self._work.tools = checked

    def get_tools(self) -> list[dict[str, Any]]:
        return [dict(t) for t in self._work.tools]

    # -- plugins ---------------------------------------------------------------------------------

    def register_plugin(
        self, plugin: Any, *, name: str | None = None, priority: int | None = None, compactable: bool | None = None
    ) -> Any:
        """Add a plugin (an object, or a function returning the content; name, priority and compactable then apply).

        A state kept for a plugin of this name (restored before it was registered) is restored into it.
        """
        plugin = as_plugin(plugin, name=name, priority=priority, compactable=compactable)
        if plugin.name in self._work.plugins:
            raise ConfigError(
                f"a plugin named {plugin.name!r} is already registered; unregister it or pick another name"
            )
        self._work.plugins[plugin.name] = plugin
        if plugin.name in self._work.orphans:
            restore_plugin(self._work, plugin, self._work.orphans.pop(plugin.name))
        self._join()
        return plugin

    def unregister_plugin(self, name: str) -> None:
        if self._work.plugins.pop(name, None) is None:
            raise ConfigError(f"no plugin named {name!r}; registered: {list(self._work.plugins)}")

    def get_plugin(self, name: str) -> Any:
        return self._work.plugins.get(name)

    def list_plugins(self) -> list[str]:
        return list(self._work.plugins)

    # -- preparing -------------------------------------------------------------------------------

    async def prepare(self) -> PreparedContext:
        """The context for the next model call, compacted as needed (see the class docstring)."""
        return await prepare(self._work, force=False)

    async def compact(self) -> PreparedContext:
        """Compact now, to the low-water mark, whatever the strategy says; the context as it then is."""
        return await prepare(self._work, force=True)

    def get_budget(self) -> ContextBudget:
        """The budget now, without preparing: the last call's components and tools, the history as it is now.

        Before the first :meth:`prepare` the plugins' components are read now (an
        ``async`` ``get_component()`` runs to its end on an event loop of its own).
        """
        return budget_now(self._work)

    # -- configuration ---------------------------------------------------------------------------

    def set_strategy(self, strategy: str | ContextStrategy) -> None:
        self._work.strategy = resolve_strategy(strategy)

    def get_strategy(self) -> ContextStrategy:
        return self._work.strategy

    def update_config(self, changes: Mapping[str, Any] | None = None, **options: Any) -> AssemblerConfig:
        """Change some options (a dict or keywords); the others keep their values. Returns the new options."""
        merged = {**self._work.config.model_dump(), **seed_names({**dict(changes or {}), **options})}
        self._work.config = self._checked_config(merged)
        return self._work.config

    def get_config(self) -> AssemblerConfig:
        return self._work.config

    # -- state -----------------------------------------------------------------------------------

    def get_state(self) -> AssemblerState:
        """The state to save (``.model_dump_json()``) and restore later, here or in another process."""
        return state_of(self._work)

    def restore_state(self, state: AssemblerState | Mapping[str, Any] | str | bytes) -> None:
        """Carry on from a saved state (the model, its dict or its JSON); checked whole before anything changes.

        A plugin state with no plugin of that name here is kept (and in the next
        ``get_state()``) with a :class:`~toolctx.ToolctxWarning`; registering such a
        plugin later restores it. A state of another version raises
        :class:`StateVersionError`, changing nothing.
        """
        restore(self._work, state)
        self._join()

    # -- introspection ---------------------------------------------------------------------------

    def estimate_tokens(self, content: Any) -> int:
        """Tokens of ``content`` (text, or anything as JSON) with the assembler's counter."""
        return self._work.measure.counter.count(output_text(content))

    def get_utilization(self) -> float:
        """The percentage of the limit the context uses now (over 100 when it would not fit)."""
        return 100.0 * self.get_budget().utilization

    def get_metrics(self) -> dict[str, Any]:
        """Counts and sizes: prepares, compactions, tokens freed, messages kept and shown, spans, plugins."""
        last = self._work.last
        return {
            "prepares": self._work.metrics.prepares,
            "compactions": self._work.metrics.compactions,
            "tokens_freed": self._work.metrics.freed,
            "history_messages": len(self._work.history),
            "shown_messages": len(last.history) if last else len(self._work.history),
            "compacted_spans": len(self._work.spans),
            "compacted_messages": sum(len(s.message_ids) for s in self._work.spans),
            "plugins": list(self._work.plugins),
            "last_budget": last.budget.model_dump() if last else None,
            "last_prepare_seconds": self._work.metrics.seconds,
            "counter": self._work.measure.counter.name,
        }
