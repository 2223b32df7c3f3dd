"""The first stand-in re-sends the whole prompt (it brings read_context into the tool list, which comes first).

So whether it pays counts the system prompt and the tools too: an output that is
worth standing in for under a short system prompt stays whole under a long one,
in both frameworks' real loops.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool, handoff
from agents.testing import ScriptedModel, assistant_message, function_call
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from toolctx_langchain import ToolContextMiddleware
from toolctx_openai_agents import compact_tool_outputs, persist_tools

from toolctx import session
from toolctx.compaction import CompactionSettings, is_stand_in, notes
from toolctx.tokens import estimate_tokens

from .test_langchain import chat

REPORT = "".join(f"{n}: booking {n:05d}, economy, two bags, paid by card\n" for n in range(160))
SETTINGS = CompactionSettings()
SHORT = "You help customers with their bookings."
LONG = "".join(f"Policy {n}: a customer may change a booking under rule {n}, within its limits.\n" for n in range(320))


def test_the_output_and_prompts_sit_either_side_of_the_break_even() -> None:
    """The numbers the tests below rest on: the stand-in pays for itself after SHORT, not after LONG.

    The output comes after the first model call (1 call so far, expected 1 more);
    100 tokens is room for the question, the call and the tool's definition.
    """
    freed = estimate_tokens(REPORT) - SETTINGS.stand_in_tokens
    assert estimate_tokens(REPORT) > SETTINGS.max_output_tokens
    assert freed * (1 + SETTINGS.cached_price) > (1 - SETTINGS.cached_price) * (estimate_tokens(SHORT) + 100)
    assert freed * (1 + SETTINGS.cached_price) < (1 - SETTINGS.cached_price) * estimate_tokens(LONG)


@tool
def bookings(user: str) -> str:
    """The user's bookings."""
    return REPORT


@pytest.mark.parametrize(("system", "stood_in"), [(SHORT, True), (LONG, False)], ids=["short", "long"])
def test_langchain_counts_the_system_prompt(context_dir: Path, system: str, stood_in: bool) -> None:
    model = chat(
        AIMessage(content="", tool_calls=[{"name": "bookings", "args": {"user": "ann"}, "id": "b1"}]),
        AIMessage(content="You have 160 bookings."),
    )
    agent = create_agent(model, [bookings], system_prompt=system, middleware=[ToolContextMiddleware()])
    with session(context_dir) as s:
        agent.invoke({"messages": [HumanMessage("What are my bookings?")]})
        prefix = notes(s).prefix_tokens
    shown = next(m for m in model.received[1] if isinstance(m, ToolMessage))
    assert is_stand_in(shown.content) is stood_in
    assert prefix > estimate_tokens(system) + estimate_tokens("bookings")  # the system prompt and the tool


@function_tool
def agent_bookings(user: str) -> str:
    """The user's bookings."""
    return REPORT


@pytest.mark.parametrize(("instructions", "stood_in"), [(SHORT, True), (LONG, False)], ids=["short", "long"])
def test_the_agents_sdk_counts_the_instructions(context_dir: Path, instructions: str, stood_in: bool) -> None:
    model = ScriptedModel(
        [[function_call("agent_bookings", {"user": "ann"}, call_id="b1")], [assistant_message("160 bookings.")]]
    )
    agent = Agent(name="desk", instructions=instructions, model=model, tools=persist_tools([agent_bookings]))
    config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_tool_outputs())
    with session(context_dir) as s:
        asyncio.run(Runner.run(agent, "What are my bookings?", run_config=config))
        prefix = notes(s).prefix_tokens
    shown: list[Any] = [
        i["output"] for i in model.calls[1].input if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    assert is_stand_in(shown[0]) is stood_in
    assert prefix > estimate_tokens(instructions) + estimate_tokens("agent_bookings")


def test_the_agents_sdk_counts_the_handoffs_the_model_is_sent_as_tools(context_dir: Path) -> None:
    desks = [
        Agent(name=f"desk_{n}", handoff_description=f"Handles bookings of region {n}: " + "changes, refunds. " * 40)
        for n in range(4)
    ]

    def prefix_of(handoffs: list[Any]) -> int:
        model = ScriptedModel([[assistant_message("Hello.")]])
        agent = Agent(name="triage", instructions=SHORT, model=model, tools=[agent_bookings], handoffs=handoffs)
        config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_tool_outputs())
        with session(context_dir) as s:
            asyncio.run(Runner.run(agent, "Hi", run_config=config))
            return notes(s).prefix_tokens

    alone = prefix_of([])
    with_desks = prefix_of([*desks[:2], handoff(desks[2]), desks[3]])
    assert with_desks - alone > sum(estimate_tokens(d.handoff_description or "") for d in desks)
