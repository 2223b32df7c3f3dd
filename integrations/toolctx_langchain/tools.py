"""The read_context tool for LangChain, and persist_tool for tools used without the middleware."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool

from toolctx import ContextSession, current_session
from toolctx.standins import DEFAULT_READ_LIMIT, output_text, read_context, stand_in
from toolctx.tokens import estimate_tokens

__all__ = ["READ_CONTEXT", "persist_tool", "read_context_tool", "resolver"]

READ_CONTEXT = "read_context"
READ_CONTEXT_DESCRIPTION = (
    "Read a stored tool output by its handle. Outputs too long to show, and older ones, are replaced "
    "in the conversation by a stand-in naming a handle like ctx:1a2b3c4; pass that handle as id. "
    "offset is the character to start from, limit how many characters to return."
)

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


def read_context_tool(session: SessionSource = None) -> BaseTool:
    """The ``read_context`` tool, reading from ``session`` (the current toolctx session by default)."""
    get_session = resolver(session)

    def read_context_fn(id: str, offset: int = 0, limit: int = DEFAULT_READ_LIMIT) -> str:
        return read_context(get_session(), id, offset, limit)

    return StructuredTool.from_function(read_context_fn, name=READ_CONTEXT, description=READ_CONTEXT_DESCRIPTION)


def persist_tool(
    tool: BaseTool,
    *,
    max_output_tokens: int = 1000,
    head_chars: int = 1500,
    tail_chars: int = 500,
    session: SessionSource = None,
) -> BaseTool:
    """A copy of ``tool`` whose calls are stored in toolctx, with big outputs replaced by stand-ins.

    For tools used without :class:`~toolctx_langchain.ToolContextMiddleware`. The
    wrapped tool keeps the name, description, argument schema and error handling.
    Plain functions need no wrapper: decorate them with ``@persist_context`` before
    ``@tool``.
    """
    if not isinstance(tool, BaseTool):
        raise TypeError(
            f"persist_tool takes a LangChain tool, got {type(tool).__name__}; for a plain function, "
            "decorate it with @toolctx.persist_context before @tool"
        )
    get_session = resolver(session)

    def shown(session: ContextSession, args: dict[str, Any], output: Any) -> Any:
        pointer = session.save_context(tool.name, args, output)
        text = output_text(output)
        if estimate_tokens(text) > max_output_tokens:
            return stand_in(pointer, text, head_chars, tail_chars)
        return output

    def run(config: RunnableConfig, **kwargs: Any) -> Any:
        session = get_session()
        try:
            output = tool.invoke(kwargs, config=config)
        except Exception as exc:
            session.save_context(tool.name, kwargs, None, error=exc)
            raise
        return shown(session, kwargs, output)

    async def arun(config: RunnableConfig, **kwargs: Any) -> Any:
        session = get_session()
        try:
            output = await tool.ainvoke(kwargs, config=config)
        except Exception as exc:
            session.save_context(tool.name, kwargs, None, error=exc)
            raise
        return shown(session, kwargs, output)

    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema if tool.args_schema is not None else tool.get_input_schema(),
        func=run,
        coroutine=arun,
        return_direct=tool.return_direct,
        handle_tool_error=tool.handle_tool_error,
        handle_validation_error=tool.handle_validation_error,
        tags=tool.tags,
        metadata=tool.metadata,
    )
