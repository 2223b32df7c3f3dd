"""One context assembler for every model call: history, plugins, priority compaction, events, state.

::

    from toolctx.assembly import ContextAssembler, PlanPlugin, ToolOutputPlugin

    ctx = ContextAssembler(max_tokens=128_000, system_prompt="You are ...", tools=tool_definitions)
    plan = ctx.register_plugin(PlanPlugin())
    ctx.register_plugin(ToolOutputPlugin())
    ctx.set_current_input("Fix the failing test")
    prepared = await ctx.prepare()                 # measured, compacted if needed
    reply = client.chat.completions.create(model=..., messages=prepared.to_openai(),
                                           tools=prepared.openai_tools() or None)

- :class:`ContextAssembler` (also :class:`UnifiedContextManager`) keeps the system
  prompt, instructions, the whole history and the current input, prepares each call
  within a token budget and compacts by priority, restorably;
- plugins add components (:class:`PlanPlugin`, :class:`MemoryPlugin`) or work on the
  history (:class:`ToolOutputPlugin`, with toolctx's compaction policy); a function
  returning text is a plugin too;
- strategies (:func:`proactive`, :func:`lazy`, :func:`adaptive`, or yours) decide
  when and how far to compact;
- :class:`PreparedContext` renders for OpenAI, Anthropic and LangChain;
  :class:`AssemblerState` saves and restores it all.
"""

from __future__ import annotations

from toolctx.assembly._assembler import ContextAssembler, Summarizer
from toolctx.assembly._builtin import MemoryPlugin, Plan, PlanPlugin, PlanTask, TaskStatus
from toolctx.assembly._events import EVENTS, Event
from toolctx.assembly._history import HISTORY_TOOL, HistorySpan
from toolctx.assembly._measure import FRAMING, REPLY_PRIMING
from toolctx.assembly._pairing import MISSING_RESULT
from toolctx.assembly._plugins import ContextPlugin, FunctionPlugin
from toolctx.assembly._render import CONTEXT_ID, SYSTEM_ID, PreparedContext
from toolctx.assembly._state import STATE_VERSION, AssemblerState
from toolctx.assembly._strategies import (
    STRATEGIES,
    Candidate,
    CompactionPlan,
    Strategy,
    StrategyInput,
    adaptive,
    lazy,
    proactive,
)
from toolctx.assembly._tool_outputs import READ_CONTEXT_DEFINITION, ToolOutputPlugin
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

UnifiedContextManager = ContextAssembler
"""The seed's name for :class:`ContextAssembler`."""

__all__ = [
    "CONTEXT_ID",
    "EVENTS",
    "FRAMING",
    "HISTORY",
    "HISTORY_TOOL",
    "MISSING_RESULT",
    "READ_CONTEXT_DEFINITION",
    "REPLY_PRIMING",
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
    "Strategy",
    "StrategyInput",
    "Summarizer",
    "TaskStatus",
    "ToolCallSpec",
    "ToolOutputPlugin",
    "UnifiedContextManager",
    "adaptive",
    "lazy",
    "proactive",
]
