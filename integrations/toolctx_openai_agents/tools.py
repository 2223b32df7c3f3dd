"""persist_tools and the read_context function tool for the Agents SDK."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

from agents import FunctionTool, Tool, function_tool
from agents.tool_context import ToolContext

from toolctx import ContextSession, current_session
from toolctx._internal import internal_error
from toolctx.standins import DEFAULT_READ_LIMIT, output_text, stand_in
from toolctx.standins import read_context as read_stored
from toolctx.tokens import estimate_tokens

__all__ = ["SessionSource", "parse_arguments", "persist_tools", "read_context", "read_context_tool", "resolver"]

SessionSource = ContextSession | Callable[[], ContextSession] | None


def resolver(session: SessionSource) -> Callable[[], ContextSession]:
    """A function giving the session to use: a fixed one, a factory, or the current session."""
    if session is None:
        return current_session
    if isinstance(session, ContextSession):
        return lambda: session
    if callable(session):
        return session
    raise TypeError(f"session must be a toolctx ContextSession, a function returning one, or None; got {session!r:.80}")


def parse_arguments(arguments: str) -> dict[str, Any]:
    """The tool call's arguments: they arrive as a JSON string, which may be empty or broken."""
    try:
        parsed = json.loads(arguments) if arguments and arguments.strip() else {}
    except json.JSONDecodeError:
        return {"arguments": arguments}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


def read_context_tool(session: SessionSource = None) -> FunctionTool:
    """The ``read_context`` function tool, reading from ``session`` (the current one by default)."""
    get_session = resolver(session)

    def read_context(id: str, offset: int = 0, limit: int = DEFAULT_READ_LIMIT) -> str:
        """Read a stored tool output by its handle.

        Outputs too long to show, and older ones, are replaced in the conversation by a
        stand-in naming a handle like ctx:1a2b3c4.

        Args:
            id: the handle from a stand-in, for example ctx:1a2b3c4.
            offset: the character to start reading from.
            limit: how many characters to return.
        """
        return read_stored(get_session(), id, offset, limit)

    return function_tool(read_context, failure_error_function=None)


read_context = read_context_tool()
"""The ``read_context`` tool over the current toolctx session."""


class _Persisted:
    """The on_invoke_tool of a persisted FunctionTool."""

    def __init__(
        self,
        tool: FunctionTool,
        get_session: Callable[[], ContextSession],
        max_output_tokens: int,
        head_chars: int,
        tail_chars: int,
    ) -> None:
        self.name = tool.name
        self.get_session = get_session
        self.max_output_tokens = max_output_tokens
        self.head_chars, self.tail_chars = head_chars, tail_chars
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
        session = self.get_session()
        args = parse_arguments(arguments)
        try:
            output = await self.invoke(ctx, arguments)
        except Exception as exc:
            self._save(session, args, None, exc, ctx)
            raise
        error = self.errors.pop(ctx.tool_call_id, None)
        pointer = self._save(session, args, output, error, ctx)
        if pointer is None or error is not None:
            return output
        text = output_text(output)
        if estimate_tokens(text) > self.max_output_tokens:
            return stand_in(pointer, text, self.head_chars, self.tail_chars)
        return output

    def _save(
        self, session: ContextSession, args: dict[str, Any], output: Any, error: Exception | None, ctx: ToolContext[Any]
    ) -> Any:
        try:
            return session.save_context(self.name, args, output, error=error, call_id=ctx.tool_call_id)
        except Exception as exc:
            internal_error(f"could not store a call of tool {self.name!r}", exc)
            return None


def persist_tools(
    tools: Sequence[Tool],
    *,
    max_output_tokens: int = 1000,
    head_chars: int = 1500,
    tail_chars: int = 500,
    session: SessionSource = None,
) -> list[Tool]:
    """Copies of ``tools`` whose function tools store every call in toolctx.

    Each FunctionTool's ``on_invoke_tool`` is wrapped: the call's arguments (a JSON
    string, parsed) and output are saved with the tool call id; an output over
    ``max_output_tokens`` reaches the model as a stand-in with a ``ctx:<id>`` handle;
    errors are stored, and the SDK's own error handling still decides what the
    model sees. Other tools (hosted, computer, ...) are returned unchanged.
    """
    get_session = resolver(session)
    wrapped: list[Tool] = []
    for tool in tools:
        if isinstance(tool, FunctionTool) and tool.name != "read_context":
            persisted = copy.copy(tool)
            persisted.on_invoke_tool = _Persisted(tool, get_session, max_output_tokens, head_chars, tail_chars)
            wrapped.append(persisted)
        else:
            wrapped.append(tool)
    return wrapped
