"""Token counts for an OpenAI Agents SDK run: the agent's instructions, tools, handoffs and input items."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agents import Agent, FunctionTool, Handoff, handoff

from toolctx.tokens import TokenCounter, count_request, counter_for_model

__all__ = ["agent_tool_definitions", "count_agent_request"]


def agent_tool_definitions(agent: Agent[Any]) -> list[dict[str, Any]]:
    """The function definitions the model receives for ``agent``: its function tools, then its handoffs.

    Each is a Responses API tool dict (``{"type": "function", "name", "description",
    "parameters"}``). Hosted tools (web search, file search, computer use) are
    described by the provider, not by a schema the request carries, and are left out.
    """
    definitions = [
        {"type": "function", "name": t.name, "description": t.description, "parameters": t.params_json_schema}
        for t in agent.tools
        if isinstance(t, FunctionTool)
    ]
    for target in agent.handoffs:
        described = target if isinstance(target, Handoff) else handoff(target)
        definitions.append(
            {
                "type": "function",
                "name": described.tool_name,
                "description": described.tool_description,
                "parameters": described.input_json_schema,
            }
        )
    return definitions


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
