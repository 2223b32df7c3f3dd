"""ToolContextHooks: RunHooks that store tool outputs, for runs that only want to observe."""

from __future__ import annotations

from typing import Any

from agents import Agent, RunContextWrapper, RunHooks, Tool
from agents.tool_context import ToolContext

from toolctx.compaction import SessionSource, persist_call, session_resolver
from toolctx_openai_agents.tools import conversation_of, parse_arguments

__all__ = ["ToolContextHooks"]


class ToolContextHooks(RunHooks[Any]):
    """Stores every tool call's arguments and output in toolctx; changes nothing the model sees.

    Hooks can only observe: for stand-ins and handles use :func:`persist_tools`.
    """

    def __init__(self, session: SessionSource = None) -> None:
        self.session = session_resolver(session)

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object) -> None:
        arguments = context.tool_arguments if isinstance(context, ToolContext) else ""
        call_id = context.tool_call_id if isinstance(context, ToolContext) else None
        group = conversation_of(context)
        persist_call(self.session(None), tool.name, parse_arguments(arguments), result, call_id=call_id, task_id=group)
