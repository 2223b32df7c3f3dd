"""LangChain's @tool and the Agents SDK's @function_tool see a decorated tool as the original."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agents import FunctionTool, function_tool
from agents.tool_context import ToolContext
from langchain_core.tools import tool

from toolctx import persist_context, session


def search_code(query: str, limit: int = 10) -> list[dict[str, Any]]:
    """Search the code base.

    Args:
        query: what to look for
        limit: how many hits to return
    """
    return [{"path": f"{query}/{i}.py"} for i in range(limit)]


async def get_financials(ticker: str, period: str = "annual") -> dict[str, Any]:
    """Fetch financial statements for a ticker."""
    return {"ticker": ticker, "period": period}


def test_langchain_builds_the_same_tool() -> None:
    for func in (search_code, get_financials):
        plain, wrapped = tool(func), tool(persist_context(func))
        assert wrapped.name == plain.name
        assert wrapped.description == plain.description
        assert isinstance(wrapped.args_schema, type)
        assert isinstance(plain.args_schema, type)
        assert wrapped.args_schema.model_json_schema() == plain.args_schema.model_json_schema()
        assert (wrapped.coroutine is None) == (plain.coroutine is None)  # type: ignore[attr-defined]


def test_agents_sdk_builds_the_same_tool() -> None:
    for func in (search_code, get_financials):
        plain, wrapped = function_tool(func), function_tool(persist_context(func))
        assert isinstance(wrapped, FunctionTool)
        assert wrapped.name == plain.name
        assert wrapped.description == plain.description
        assert wrapped.params_json_schema == plain.params_json_schema


def test_langchain_tool_calls_are_stored(context_dir: Path) -> None:
    lc_sync, lc_async = tool(persist_context(search_code)), tool(persist_context(get_financials))

    async def main() -> None:
        async with session(context_dir) as s:
            assert lc_sync.invoke({"query": "auth", "limit": 1}) == [{"path": "auth/0.py"}]
            assert await lc_sync.ainvoke({"query": "db", "limit": 1}) == [{"path": "db/0.py"}]  # runs in a thread
            assert await lc_async.ainvoke({"ticker": "AAPL"}) == {"ticker": "AAPL", "period": "annual"}
            assert [p.args for p in s.get_all_pointers()] == [
                {"query": "auth", "limit": 1},
                {"query": "db", "limit": 1},
                {"ticker": "AAPL", "period": "annual"},
            ]

    asyncio.run(main())


def test_agents_sdk_tool_calls_are_stored(context_dir: Path) -> None:
    sdk_sync, sdk_async = function_tool(persist_context(search_code)), function_tool(persist_context(get_financials))

    async def invoke(t: FunctionTool, arguments: str) -> Any:
        ctx = ToolContext(context=None, tool_name=t.name, tool_call_id="call-1", tool_arguments=arguments)
        return await t.on_invoke_tool(ctx, arguments)

    async def main() -> None:
        async with session(context_dir) as s:
            await invoke(sdk_sync, '{"query": "auth", "limit": 1}')
            await invoke(sdk_async, '{"ticker": "MSFT", "period": "quarterly"}')
            assert [(p.tool_name, p.args) for p in s.get_all_pointers()] == [
                ("search_code", {"query": "auth", "limit": 1}),
                ("get_financials", {"ticker": "MSFT", "period": "quarterly"}),
            ]

    asyncio.run(main())
