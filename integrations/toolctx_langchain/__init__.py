"""toolctx for LangChain 1.x agents.

Register the middleware once and every tool call of the agent is stored in the
current toolctx session; big outputs reach the model as a restorable stand-in
with a handle (``ctx:<id>``), older results are compacted the same way once the
conversation grows, and the ``read_context`` tool lets the model read anything
back::

    import toolctx
    from langchain.agents import create_agent
    from toolctx_langchain import ToolContextMiddleware

    agent = create_agent(model, tools, middleware=[ToolContextMiddleware()])
    with toolctx.session():
        agent.invoke({"messages": [("user", "...")]})

Install with ``pip install 'toolctx[langchain]'``.
"""

from __future__ import annotations

try:
    import langchain.agents  # noqa: F401
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without LangChain
    raise ImportError(
        "toolctx_langchain needs LangChain 1.x; install it with: pip install 'toolctx[langchain]'"
    ) from exc

from toolctx_langchain.assembly import AssemblerMiddleware
from toolctx_langchain.middleware import ToolContextMiddleware
from toolctx_langchain.tools import persist_tool, read_context_tool

__all__ = ["AssemblerMiddleware", "ToolContextMiddleware", "persist_tool", "read_context_tool"]
