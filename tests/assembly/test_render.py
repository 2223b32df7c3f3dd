"""One prepared context, three clients: OpenAI chat, Anthropic messages, LangChain messages."""

from __future__ import annotations

import toolctx
from toolctx.assembly import ContextAssembler, ToolOutputPlugin

from .conftest import orphans, run


def prepared_chat(s: toolctx.ContextSession) -> ContextAssembler:
    tools = [
        {"type": "function", "function": {"name": "search", "description": "find", "parameters": {"type": "object"}}}
    ]
    ctx = ContextAssembler(system_prompt="be kind", tools=tools, session=s, plugins=[ToolOutputPlugin(session=s)])
    ctx.register_plugin(lambda: "remember milk", name="memory")
    ctx.set_current_input("find milk")
    ctx.add_message(
        "assistant",
        "looking",
        tool_calls=[
            {"id": "t1", "name": "search", "arguments": {"q": "milk"}},
            {"id": "t2", "name": "search", "arguments": {"q": "eggs"}},
        ],
    )
    ctx.add_tool_result("t1", {"found": 3})
    ctx.add_tool_result("t2", "none")
    return ctx


def test_openai_messages(s: toolctx.ContextSession) -> None:
    prepared = run(prepared_chat(s).prepare())
    assert prepared.to_openai() == [
        {"role": "system", "content": "be kind"},
        {"role": "user", "content": "find milk"},
        {
            "role": "assistant",
            "content": "looking",
            "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "search", "arguments": '{"q": "milk"}'}},
                {"id": "t2", "type": "function", "function": {"name": "search", "arguments": '{"q": "eggs"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": '{"found":3}'},
        {"role": "tool", "tool_call_id": "t2", "content": "none"},
        {"role": "system", "content": "<memory>\nremember milk\n</memory>"},
    ]
    assert [t["function"]["name"] for t in prepared.openai_tools()] == ["search"]


def test_anthropic_messages_put_results_first_in_one_user_turn(s: toolctx.ContextSession) -> None:
    prepared = run(prepared_chat(s).prepare())
    out = prepared.to_anthropic()
    assert out["system"] == "be kind"
    assert out["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "find milk"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "looking"},
                {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "milk"}},
                {"type": "tool_use", "id": "t2", "name": "search", "input": {"q": "eggs"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": '{"found":3}'},
                {"type": "tool_result", "tool_use_id": "t2", "content": "none"},
                {"type": "text", "text": "<memory>\nremember milk\n</memory>"},
            ],
        },
    ]
    assert prepared.anthropic_tools() == [{"name": "search", "description": "find", "input_schema": {"type": "object"}}]


def test_langchain_messages(s: toolctx.ContextSession) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    messages = run(prepared_chat(s).prepare()).to_langchain()
    assert [type(m) for m in messages] == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        ToolMessage,
        ToolMessage,
        SystemMessage,
    ]
    assert messages[2].tool_calls[1]["args"] == {"q": "eggs"}
    assert messages[3].tool_call_id == "t1"
    openai_like = [
        {"role": "tool", "tool_call_id": m.tool_call_id}
        if isinstance(m, ToolMessage)
        else {"role": m.type, "tool_calls": [{"id": c["id"]} for c in getattr(m, "tool_calls", [])]}
        for m in messages
    ]
    assert orphans(openai_like) == 0
