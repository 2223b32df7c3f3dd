"""persist_tools and the read_context function tool for the Agents SDK."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

from agents import FunctionTool, Tool, function_tool
from agents.tool_context import ToolContext

from toolctx import ContextSession
from toolctx._internal import internal_error
from toolctx.compaction import (
    READ_CONTEXT,
    CompactionSettings,
    Resolver,
    SavedCall,
    SessionSource,
    notes,
    persist_call,
    session_resolver,
    shown_output,
)
from toolctx.standins import DEFAULT_READ_LIMIT, output_text
from toolctx.standins import read_context as read_stored

__all__ = ["conversation_of", "parse_arguments", "persist_tools", "read_context", "read_context_tool"]


def parse_arguments(arguments: str) -> dict[str, Any]:
    """The tool call's arguments: they arrive as a JSON string, which may be empty or broken."""
    try:
        # (json, not orjson: orjson reads an integer past 64 bits as a float, losing digits)
        parsed = json.loads(arguments) if arguments and not arguments.isspace() else {}
    except json.JSONDecodeError:
        return {"arguments": arguments}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


def conversation_of(context: object) -> str | None:
    """The run's ``RunConfig.group_id`` (the SDK's conversation id), which tags calls and scopes reads."""
    run_config = getattr(context, "run_config", None)
    group = getattr(run_config, "group_id", None)
    return group if isinstance(group, str) and group else None


def read_context_tool(session: SessionSource = None) -> FunctionTool:
    """The ``read_context`` function tool, reading from ``session`` (the current one by default).

    With a ``RunConfig.group_id`` it reads only outputs stored under that group, so
    a handle from another conversation reads as unknown even in a shared session.
    """
    get_session = session_resolver(session)

    def read_context(
        ctx: ToolContext[Any], id: str, offset: int = 0, limit: int = DEFAULT_READ_LIMIT, part: str = "result"
    ) -> str:
        """Read back a stored tool output by the handle ctx:<id> named in a [toolctx stand-in].

        Args:
            id: the handle.
            offset: the character to start from.
            limit: how many characters.
            part: "result", or "args.<name>" for an argument.
        """
        return read_stored(get_session(None), id, offset, limit, part, scope=conversation_of(ctx))

    def offered(context: Any, agent: Any) -> bool:
        """Offered once the conversation has a stand-in, or the call before its first batch of them."""
        try:
            return notes(get_session(None)).offer_read_context
        except Exception as exc:
            internal_error("could not tell whether to offer read_context; offering it", exc)
            return True

    return function_tool(read_context, failure_error_function=None, is_enabled=offered)


read_context = read_context_tool()
"""The ``read_context`` tool over the current toolctx session."""


class _Persisted:
    """The on_invoke_tool of a persisted FunctionTool."""

    def __init__(self, tool: FunctionTool, get_session: Resolver, settings: CompactionSettings) -> None:
        self.name = tool.name
        self.get_session = get_session
        self.settings = settings
        self.errors: dict[str, Exception] = {}
        self.invoke = self._watch_errors(tool.on_invoke_tool)

    def _watch_errors(self, invoker: Any) -> Callable[[ToolContext[Any], str], Any]:
        """Also see exceptions the SDK turns into a message for the model, to record them.

        The SDK's invoker catches a tool's exception and returns its failure message;
        its inner implementation still raises. Where the invoker exposes that inner
        step, a copy of the invoker runs a watched one; otherwise only exceptions the
        SDK lets through are recorded as errors.
        """
        inner = getattr(invoker, "_invoke_tool_impl", None)
        if inner is None:
            return invoker  # type: ignore[no-any-return]
        errors = self.errors

        async def watched(ctx: ToolContext[Any], arguments: str) -> Any:
            try:
                return await inner(ctx, arguments)
            except Exception as exc:
                errors[ctx.tool_call_id] = exc
                raise

        watching = copy.copy(invoker)
        watching._invoke_tool_impl = watched
        return watching  # type: ignore[no-any-return]

    async def __call__(self, ctx: ToolContext[Any], arguments: str) -> Any:
        # The arguments are the model's JSON: the SDK passes its RunContextWrapper/ToolContext apart.
        try:
            output = await self.invoke(ctx, arguments)
        except Exception as exc:
            self.errors.pop(ctx.tool_call_id, None)
            self._save(ctx, arguments, None, exc)
            raise
        error = self.errors.pop(ctx.tool_call_id, None)
        session, pointer = self._save(ctx, arguments, output, error)
        if session is None:
            return output
        if error is not None:
            return output
        try:
            shown = shown_output(self.settings, session, pointer, output_text(output))
        except Exception as exc:
            internal_error(f"could not make a stand-in for a call of tool {self.name!r}", exc)
            shown = None
        return output if shown is None else shown

    def _save(
        self, ctx: ToolContext[Any], arguments: str, output: Any, error: Exception | None
    ) -> tuple[ContextSession | None, SavedCall | None]:
        """Store the call in the run's session; (None, None) if there is none to store it in."""
        try:
            session = self.get_session(None)
        except Exception as exc:
            internal_error(f"could not open the session for a call of tool {self.name!r}", exc)
            return None, None
        args = parse_arguments(arguments)
        group = conversation_of(ctx)
        return session, persist_call(
            session, self.name, args, output, error=error, call_id=ctx.tool_call_id, task_id=group
        )


def persist_tools(
    tools: Sequence[Tool],
    settings: CompactionSettings | None = None,
    *,
    session: SessionSource = None,
    **options: Any,
) -> list[Tool]:
    """Copies of ``tools`` whose function tools store every call in toolctx.

    Each FunctionTool's ``on_invoke_tool`` is wrapped: the call's arguments (the
    model's JSON string, parsed; the SDK's context object is never stored) and
    output are saved with the tool call id, tagged with the latest user message
    when :func:`compact_tool_outputs` runs too; an output over
    ``max_output_tokens`` reaches the model as a stand-in with a ``ctx:<id>``
    handle (options: those of :class:`~toolctx.compaction.CompactionSettings`).
    Errors are stored, and the SDK's own error handling still decides what the
    model sees; an output that could not be stored reaches the model whole. Other
    tools (hosted, computer, ...) are returned unchanged.
    """
    if settings is not None and options:
        raise TypeError("pass either a CompactionSettings or its options by keyword, not both")
    chosen = settings if settings is not None else CompactionSettings(**options)
    get_session = session_resolver(session)
    wrapped: list[Tool] = []
    for tool in tools:
        if isinstance(tool, FunctionTool) and tool.name != READ_CONTEXT:
            persisted = copy.copy(tool)
            persisted.on_invoke_tool = _Persisted(tool, get_session, chosen)
            wrapped.append(persisted)
        else:
            wrapped.append(tool)
    return wrapped
