"""ToolContextHooks: RunHooks that store tool outputs, for runs that only want to observe."""

from __future__ import annotations

from typing import Any

from agents import Agent, RunContextWrapper, RunHooks, Tool
from agents.tool_context import ToolContext

from toolctx.compaction import (
    READ_CONTEXT,
    CompactionSettings,
    SessionSource,
    notes,
    output_text,
    over_limit,
    persist_call,
    session_resolver,
)
from toolctx.telemetry import events
from toolctx_openai_agents.tools import _Persisted, conversation_of, parse_arguments

__all__ = ["ToolContextHooks"]


class ToolContextHooks(RunHooks[Any]):
    """Stores every tool call's arguments and output in toolctx, those of MCP servers' tools included.

    Hooks can only observe. For stand-ins and handles, wrap function tools with
    :func:`persist_tools`; tools the agent gets at run time (from MCP servers) get
    theirs from :func:`compact_tool_outputs`, and with these hooks in the run the
    model is offered ``read_context`` in the same call as their first stand-in.
    Calls of :func:`persist_tools`' copies are left to them (stored once).
    ``settings`` (or its options by keyword) must match the filter's.
    """

    def __init__(
        self, settings: CompactionSettings | None = None, *, session: SessionSource = None, **options: Any
    ) -> None:
        self.settings = CompactionSettings.of(settings, **options)
        self.session = session_resolver(session)

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object) -> None:
        # A persisted tool (or the SDK's copy of one: namespaced, say) stored its call itself.
        if tool.name == READ_CONTEXT or isinstance(getattr(tool, "on_invoke_tool", None), _Persisted):
            return
        try:
            arguments = context.tool_arguments if isinstance(context, ToolContext) else ""
            call_id = context.tool_call_id if isinstance(context, ToolContext) else None
            session = self.session(None)
            args = parse_arguments(arguments)
            pointer = persist_call(
                session, tool.name, args, result, call_id=call_id, task_id=conversation_of(context, session)
            )
            if pointer is not None and pointer.stored and over_limit(self.settings, tool.name, output_text(result)):
                # compact_tool_outputs shows this output as a stand-in: offer read_context in the same model call
                notes(session).offer_read_context = True
        except Exception as exc:  # observing never breaks the run
            events.save_failed("store", f"could not store a call of tool {tool.name!r}", exc)
