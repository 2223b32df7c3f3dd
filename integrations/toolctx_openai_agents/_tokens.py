"""Token counts for an OpenAI Agents SDK run: the agent's instructions, tools, handoffs and input items."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agents import Agent, FunctionTool, Handoff, handoff

from toolctx.tokens import TokenCounter, count_request, counter_for_model

__all__ = ["agent_tool_definitions", "count_agent_request", "tool_definition"]


def agent_tool_definitions(agent: Agent[Any]) -> list[dict[str, Any]]:
    """The function definitions the model receives for ``agent``: its function tools, then its handoffs.

    Each is a Responses API tool dict (``{"type": "function", "name", "description",
    "parameters"}``). Hosted tools (web search, file search, computer use) are
    described by the provider, not by a schema the request carries, and are left out.
    """
    described = (tool_definition(t) for t in [*agent.tools, *agent.handoffs])
    return [d for d in described if d is not None]


def tool_definition(tool: Any) -> dict[str, Any] | None:
    """The function definition the model receives for one function tool or handoff (an agent handed off
    to, or its ``Handoff``); None for anything else (a hosted tool)."""
    if isinstance(tool, FunctionTool):
        name, description, parameters = tool.name, tool.description, tool.params_json_schema
    else:
        if isinstance(tool, Agent):
            tool = handoff(tool)  # (what the SDK makes of an agent in ``handoffs``)
        if not isinstance(tool, Handoff):
            return None
        name, description, parameters = tool.tool_name, tool.tool_description, tool.input_json_schema
    return {"type": "function", "name": name, "description": description, "parameters": parameters}


def count_agent_request(
    agent: Agent[Any],
    items: str | Iterable[Any],
    *,
    counter: TokenCounter | str | None = None,
    model: str | None = None,
) -> int:
    """The prompt tokens of one model call of ``agent`` on ``items`` (a string or input items).

    Counts the agent's instructions when they are a string (dynamic instructions
    are only known during a run: count the items a ``call_model_input_filter``
    sees, whose ``instructions`` are resolved, with
    :func:`toolctx.tokens.count_request` instead), its function tools and
    handoffs, and the items. Without ``counter`` or ``model``, the agent's model
    name picks the encoding when it is an OpenAI model, else ``o200k_base``.
    """
    if counter is None and model is None:
        name = agent.model if isinstance(agent.model, str) else None
        counter = counter_for_model(name, fallback="o200k_base") if name else "o200k_base"
    system = agent.instructions if isinstance(agent.instructions, str) else None
    return count_request(items, tools=agent_tool_definitions(agent), system=system, counter=counter, model=model)
