"""One context assembler for every model call: history, plugins, priority shedding, events, state (seed 004).

::

    from toolctx.assembly import ContextAssembler, PlanPlugin, ToolOutputPlugin

    ctx = ContextAssembler(max_tokens=128_000, system_prompt="You are ...", tools=tool_definitions)
    plan = ctx.register_plugin(PlanPlugin())
    outputs = ctx.register_plugin(ToolOutputPlugin())
    ctx.set_current_input("Fix the failing test")
    prepared = await ctx.prepare()                 # measured, shed by priority if needed
    reply = client.chat.completions.create(model=..., messages=prepared.to_openai(),
                                           tools=prepared.openai_tools() or None)

Where to go for what:

- to prepare a model call → :meth:`ContextAssembler.prepare` (also
  :class:`UnifiedContextManager`), then :meth:`PreparedContext.to_openai`,
  ``to_anthropic()`` or ``to_langchain()``;
- to add a message → :meth:`ContextAssembler.add_message`; this turn's input →
  ``set_current_input()``; to keep a message whole → ``add_message(pinned=True)``
  or ``pin()``;
- to add a tool call's result → :meth:`ContextAssembler.add_tool_result` (with a
  :class:`ToolOutputPlugin` registered it is stored, and a big one shown as a
  stand-in);
- to add tool results → :meth:`ToolOutputPlugin.add_output` (no call in the
  history needed: the plugin's window of recent outputs is its component);
- to show a plan or a memory index → :class:`PlanPlugin`, :class:`MemoryPlugin`;
  your own content → ``register_plugin()`` with a function or an object
  (:class:`ContextPlugin`, or a :class:`Component` from ``get_component()``);
- to choose when and how far to shed → ``strategy=`` ``"proactive"``,
  ``"lazy"``, ``"adaptive"`` or your own :class:`ContextStrategy`;
- to set the budget → ``max_tokens`` (seed name ``max_context_tokens``) and the
  other :class:`AssemblerConfig` options;
- to see how full it is → ``get_budget()`` (a :class:`ContextBudget`, counted as
  :func:`toolctx.tokens.count_request` counts the OpenAI request),
  ``get_utilization()``, ``get_metrics()``; to be told → ``on(event)``
  (:data:`EVENTS`);
- to read compacted history back → ``expand(handle)``, or the model's
  ``read_context`` (:data:`READ_CONTEXT_DEFINITION`, :meth:`ToolOutputPlugin.read`);
- to save and carry on → ``get_state()`` / ``restore_state()``
  (:class:`AssemblerState`);
- to write a framework adapter → :data:`SYSTEM_ID`, :data:`CONTEXT_ID`,
  :func:`reset_after_failed_prepare`.

Two things are called compaction. Here, the assembler's ``compact()``,
``compactable``, :class:`CompactionPlan` and :class:`CompactionStep` keep seed
004's names for *priority shedding*: making one call's context fit the budget by
asking plugins to shrink (highest priority first), moving old history behind a
marker and, last, leaving components out of that call. :mod:`toolctx.compaction`
is the tool-time policy that replaces big or old tool outputs by restorable
stand-ins; :class:`ToolOutputPlugin` applies it to the assembler's history. Both
keep what they take out of the prompt in the session, readable by its handle.
"""

from __future__ import annotations

from toolctx.assembly._adapting import reset_after_failed_prepare
from toolctx.assembly._assembler import ContextAssembler
from toolctx.assembly._builtin import MemoryPlugin, Plan, PlanPlugin, PlanTask, TaskStatus
from toolctx.assembly._events import EVENTS, Event
from toolctx.assembly._history import HISTORY_TOOL, HistorySpan
from toolctx.assembly._pairing import MISSING_RESULT
from toolctx.assembly._plugins import ContextPlugin, FunctionPlugin
from toolctx.assembly._render import CONTEXT_ID, SYSTEM_ID, PreparedContext
from toolctx.assembly._state import STATE_VERSION, AssemblerState
from toolctx.assembly._strategies import (
    STRATEGIES,
    Candidate,
    CompactionPlan,
    ContextStrategy,
    StrategyInput,
    adaptive,
    lazy,
    proactive,
)
from toolctx.assembly._tool_outputs import READ_CONTEXT_DEFINITION, ToolOutput, ToolOutputPlugin
from toolctx.assembly._types import (
    HISTORY,
    AssemblerConfig,
    BudgetStatus,
    CompactionStep,
    Component,
    ContextBudget,
    ContextBudgetError,
    HistoryMessage,
    Role,
    StateVersionError,
    ToolCallSpec,
)
from toolctx.assembly._working import Summarizer

UnifiedContextManager = ContextAssembler
"""The seed's name for :class:`ContextAssembler`."""

__all__ = [
    "CONTEXT_ID",
    "EVENTS",
    "HISTORY",
    "HISTORY_TOOL",
    "MISSING_RESULT",
    "READ_CONTEXT_DEFINITION",
    "STATE_VERSION",
    "STRATEGIES",
    "SYSTEM_ID",
    "AssemblerConfig",
    "AssemblerState",
    "BudgetStatus",
    "Candidate",
    "CompactionPlan",
    "CompactionStep",
    "Component",
    "ContextAssembler",
    "ContextBudget",
    "ContextBudgetError",
    "ContextPlugin",
    "ContextStrategy",
    "Event",
    "FunctionPlugin",
    "HistoryMessage",
    "HistorySpan",
    "MemoryPlugin",
    "Plan",
    "PlanPlugin",
    "PlanTask",
    "PreparedContext",
    "Role",
    "StateVersionError",
    "StrategyInput",
    "Summarizer",
    "TaskStatus",
    "ToolCallSpec",
    "ToolOutput",
    "ToolOutputPlugin",
    "UnifiedContextManager",
    "adaptive",
    "lazy",
    "proactive",
    "reset_after_failed_prepare",
]
