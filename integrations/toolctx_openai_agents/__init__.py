"""toolctx for the OpenAI Agents SDK.

Wrap the agent's tools once, and every call is stored in the current toolctx
session, with big outputs shown to the model as a restorable stand-in
(``ctx:<id>``) it can read back with the ``read_context`` tool; a model input
filter compacts older outputs the same way::

    import toolctx
    from agents import Agent, RunConfig, Runner
    from toolctx_openai_agents import compact_tool_outputs, persist_tools, read_context, record_tool_errors

    agent = Agent(name="analyst", tools=[*persist_tools(tools), read_context])
    config = RunConfig(call_model_input_filter=compact_tool_outputs(), tool_error_formatter=record_tool_errors())
    with toolctx.session():
        await Runner.run(agent, question, run_config=config)

Install with ``pip install 'toolctx[openai-agents]'``.
"""

from __future__ import annotations

try:
    import agents  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the SDK
    raise ImportError(
        "toolctx_openai_agents needs the OpenAI Agents SDK; install it with: pip install 'toolctx[openai-agents]'"
    ) from exc

from toolctx_openai_agents.assembly import assembled_input
from toolctx_openai_agents.compaction import compact_tool_outputs
from toolctx_openai_agents.hooks import ToolContextHooks
from toolctx_openai_agents.tools import persist_tools, read_context, read_context_tool, record_tool_errors

__all__ = [
    "ToolContextHooks",
    "assembled_input",
    "compact_tool_outputs",
    "persist_tools",
    "read_context",
    "read_context_tool",
    "record_tool_errors",
]
