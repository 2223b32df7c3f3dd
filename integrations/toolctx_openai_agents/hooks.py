"""ToolContextHooks: RunHooks that store tool outputs, for runs that only want to observe."""

from __future__ import annotations

from typing import Any

from agents import Agent, RunContextWrapper, RunHooks, Tool
from agents.tool_context import ToolContext

from toolctx._internal import internal_error
from toolctx_openai_agents.tools import SessionSource, parse_arguments, resolver

__all__ = ["ToolContextHooks"]


class ToolContextHooks(RunHooks[Any]):
    """Stores every tool call's arguments and output in toolctx; changes nothing the model sees.

    Hooks can only observe: for stand-ins and handles use :func:`persist_tools`.
    """

    def __init__(self, session: SessionSource = None) -> None:
        self.session = resolver(session)

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object) -> None:
        try:
            arguments = context.tool_arguments if isinstance(context, ToolContext) else ""
            call_id = context.tool_call_id if isinstance(context, ToolContext) else None
            self.session().save_context(tool.name, parse_arguments(arguments), result, call_id=call_id)
        except Exception as exc:
            internal_error(f"could not store a call of tool {tool.name!r}", exc)
