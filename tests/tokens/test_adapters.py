"""Framework tools and messages count as their OpenAI equivalents, so the published figures hold."""

from __future__ import annotations

from typing import Any, Literal

from agents import Agent, function_tool
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, trim_messages
from langchain_core.tools import tool
from pydantic import BaseModel, Field
from toolctx_langchain._tokens import count_langchain_request, langchain_token_counter
from toolctx_openai_agents._tokens import agent_tool_definitions, count_agent_request

from toolctx.tokens import count_request

SYSTEM = "You are a helpful assistant that can answer to questions about the weather."
QUESTION = "What's the weather like in San Francisco?"


class WeatherQuery(BaseModel):
    location: str = Field(description="The city and state, e.g. San Francisco, CA")
    unit: Literal["celsius", "fahrenheit"] = Field("celsius", description="The unit of temperature to return")


@tool("get_current_weather", args_schema=WeatherQuery)
def lc_weather(location: str, unit: str = "celsius") -> str:
    """Get the current weather in a given location."""
    return f"20 {unit} in {location}"


def test_a_langchain_tool_counts_as_the_cookbook_request_openai_measured() -> None:
    messages = [SystemMessage(SYSTEM), HumanMessage(QUESTION)]
    # 101 prompt tokens on gpt-4o for these messages and this tool, as OpenAI's cookbook measured.
    assert count_langchain_request(messages, [lc_weather], model="gpt-4o") == 101
    assert count_langchain_request(messages, model="gpt-4o") == count_request(
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    )


def test_trim_messages_with_the_exact_counter_keeps_within_the_budget() -> None:
    history: list[BaseMessage] = [SystemMessage(SYSTEM)]
    for i in range(30):
        history += [HumanMessage(f"Question {i}: {QUESTION}"), AIMessage(f"Answer {i}: sunny, {i} degrees.")]
    count = langchain_token_counter(model="gpt-4o")
    assert count(history) > 400
    trimmed = trim_messages(history, max_tokens=200, token_counter=count, strategy="last", include_system=True)
    assert count(trimmed) <= 200
    assert trimmed[0] == history[0]
    assert trimmed[-1] == history[-1]
    assert len(trimmed) < len(history)


@function_tool(name_override="get_current_weather")
def sdk_weather(location: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """Get the current weather in a given location.

    Args:
        location: The city and state, e.g. San Francisco, CA
        unit: The unit of temperature to return
    """
    return f"20 {unit} in {location}"


def test_an_agent_counts_its_instructions_tools_handoffs_and_input() -> None:
    agent: Agent[Any] = Agent(name="weather", instructions=SYSTEM, tools=[sdk_weather], model="gpt-4o")
    assert count_agent_request(agent, QUESTION) == 101
    helper: Agent[Any] = Agent(name="billing", instructions="Bills.")
    with_handoff = agent.clone(handoffs=[helper])
    names = [d["name"] for d in agent_tool_definitions(with_handoff)]
    assert names == ["get_current_weather", "transfer_to_billing"]
    assert count_agent_request(with_handoff, QUESTION) > 101
    cl100k = agent.clone(model="gpt-4")
    assert count_agent_request(cl100k, QUESTION) == 105
    other = agent.clone(model="claude-sonnet-4-5")  # unknown tokenizer: counted in o200k_base
    assert count_agent_request(other, QUESTION) == 101
