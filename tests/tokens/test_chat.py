"""Whole chat requests: OpenAI's published counts, and the same conversation in every supported form."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from toolctx.errors import ConfigError
from toolctx.tokens import count_message, count_request, count_tools, get_counter

# OpenAI's cookbook ("How to count tokens with tiktoken"): the API reported 124 prompt tokens
# for these messages on gpt-4o and gpt-4o-mini, 129 on gpt-4 and gpt-3.5-turbo.
COOKBOOK_MESSAGES = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates corporate jargon into "
        "plain English.",
    },
    {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
    {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on opportunities for "
        "increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the client deliverable.",
    },
]
# ... and 101 (gpt-4o) / 105 (gpt-4) prompt tokens for this request with one tool.
COOKBOOK_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                    "unit": {
                        "type": "string",
                        "description": "The unit of temperature to return",
                        "enum": ["celsius", "fahrenheit"],
                    },
                },
                "required": ["location"],
            },
        },
    }
]
WEATHER_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant that can answer to questions about the weather."},
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]


@pytest.mark.parametrize(("model", "expected"), [("gpt-4o", 124), ("gpt-4o-mini", 124), ("gpt-4", 129)])
def test_messages_match_the_prompt_tokens_openai_reported(model: str, expected: int) -> None:
    assert count_request(COOKBOOK_MESSAGES, model=model) == expected


@pytest.mark.parametrize(("model", "expected"), [("gpt-4o", 101), ("gpt-4o-mini", 101), ("gpt-4", 105)])
def test_tools_match_the_prompt_tokens_openai_reported(model: str, expected: int) -> None:
    assert count_request(WEATHER_MESSAGES, tools=COOKBOOK_TOOLS, model=model) == expected


def test_the_tool_forms_of_each_api_cost_the_same() -> None:
    function = COOKBOOK_TOOLS[0]["function"]
    responses = {"type": "function", **function}
    anthropic = {
        "name": function["name"],
        "description": function["description"],
        "input_schema": function["parameters"],
    }
    expected = count_tools(COOKBOOK_TOOLS)
    assert count_tools([responses]) == count_tools([anthropic]) == expected
    assert count_tools([]) == 0
    assert count_tools(COOKBOOK_TOOLS * 2) == 2 * expected - 12  # the closing 12 tokens come once


def test_nested_parameters_cost_more_than_flat_ones() -> None:
    flat = {"name": "f", "parameters": {"type": "object", "properties": {"q": {"type": "object"}}}}
    nested = json.loads(json.dumps(flat))
    nested["parameters"]["properties"]["q"]["properties"] = {"city": {"type": "string"}, "days": {"type": "integer"}}
    assert count_tools([nested]) > count_tools([flat])


ARGS = {"city": "Paris", "days": 3}
OUTPUT = "Sunny, 21 °C, light wind from the west."


def test_one_conversation_costs_the_same_in_openai_langchain_and_agents_sdk_forms() -> None:
    openai = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": json.dumps(ARGS)}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": OUTPUT},
        {"role": "assistant", "content": "It is sunny."},
    ]
    langchain = [
        HumanMessage("Weather in Paris?"),
        AIMessage("", tool_calls=[{"name": "weather", "args": ARGS, "id": "c1"}]),
        ToolMessage(OUTPUT, tool_call_id="c1"),
        AIMessage("It is sunny."),
    ]
    sdk = [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": json.dumps(ARGS)},
        {"type": "function_call_output", "call_id": "c1", "output": OUTPUT},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is sunny."}]},
    ]
    expected = count_request(openai)
    assert count_request(langchain) == count_request(sdk) == expected
    # A tool call costs its name, its arguments and 3 tokens of framing.
    counter = get_counter("o200k_base")
    call = count_message(openai[1])
    assert call == 3 + counter.count("assistant") + 3 + counter.count("weather") + counter.count(json.dumps(ARGS))


def test_anthropic_messages_and_system_prompt_are_counted() -> None:
    anthropic = [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "t1", "name": "weather", "input": ARGS},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": OUTPUT}]},
    ]
    bare = count_request(anthropic)
    with_system = count_request(anthropic, system="You are terse.")
    counter = get_counter("o200k_base")
    assert with_system - bare == 3 + counter.count("system") + counter.count("You are terse.")
    assert bare > counter.count(OUTPUT) + counter.count(json.dumps(ARGS))


def test_a_langchain_message_with_the_call_in_its_content_counts_it_once() -> None:
    both = AIMessage(
        [{"type": "tool_use", "id": "c1", "name": "weather", "input": ARGS}],
        tool_calls=[{"name": "weather", "args": ARGS, "id": "c1"}],
    )
    only_calls = AIMessage("", tool_calls=[{"name": "weather", "args": ARGS, "id": "c1"}])
    assert count_message(both) == count_message(only_calls)


def test_agents_sdk_pydantic_items_and_plain_string_input() -> None:
    from openai.types.responses import ResponseFunctionToolCall

    item = ResponseFunctionToolCall(type="function_call", call_id="c1", name="weather", arguments=json.dumps(ARGS))
    as_dict = {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": json.dumps(ARGS)}
    assert count_message(item) == count_message(as_dict)
    assert count_request("Weather in Paris?") == count_request([{"role": "user", "content": "Weather in Paris?"}])
    assert count_message(SystemMessage("Be brief.")) == count_message({"role": "system", "content": "Be brief."})


def test_images_are_left_out_and_names_cost_one_more_token() -> None:
    text = {"role": "user", "content": [{"type": "text", "text": "What is this?"}]}
    with_image = {"role": "user", "content": [*text["content"], {"type": "image_url", "image_url": {"url": "x"}}]}
    assert count_message(with_image) == count_message(text)
    named = {**text, "name": "ann"}
    assert count_message(named) == count_message(text) + get_counter("o200k_base").count("ann") + 1


def test_the_estimate_and_cl100k_can_count_requests_too() -> None:
    assert count_request(COOKBOOK_MESSAGES, counter="cl100k_base") == 129
    estimated = count_request(COOKBOOK_MESSAGES, counter="estimate")
    assert abs(estimated - 124) / 124 < 0.2


def test_bad_requests_say_what_was_wrong() -> None:
    with pytest.raises(ConfigError, match="pass counter or model, not both"):
        count_request([], counter="o200k_base", model="gpt-4o")
    with pytest.raises(ConfigError, match="cannot count a message of type int"):
        count_request([42])
    with pytest.raises(ConfigError, match="a tool definition needs a name"):
        count_tools([{"type": "function", "parameters": {}}])
    with pytest.raises(ConfigError, match="counter must be a TokenCounter"):
        count_request([], counter=3.5)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="message content must be text or a list of parts"):
        count_message({"role": "user", "content": 7})
    with pytest.raises(ConfigError, match="no known encoding for model 'claude-3-haiku'"):
        count_request([], model="claude-3-haiku")
