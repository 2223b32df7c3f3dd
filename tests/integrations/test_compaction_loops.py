"""The compaction policy through both frameworks' real loops, over short multi-turn sessions."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, RunContextWrapper, Runner, SQLiteSession, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from toolctx_langchain import ToolContextMiddleware, persist_tool
from toolctx_openai_agents import compact_tool_outputs, persist_tools, read_context

import toolctx
from toolctx import session
from toolctx.compaction import handle_of, is_stand_in

from .test_langchain import ScriptedChat

SCRIPT = "cat <<'EOF' > app.py\n" + "".join(f"def handler_{i}(request):\n    return {i}\n" for i in range(60)) + "EOF"
OPTIONS: dict[str, Any] = {"high_water": 1500, "low_water": 0, "keep": 1, "min_gain": 0, "cached_price": 1.0}


def listing(command: str) -> str:
    return "".join(f"{command}: src/module_{i}.py ok\n" for i in range(60))


class ToolRecordingChat(ScriptedChat):
    """Also records the names of the tools bound for each call."""

    bound: list[list[str]]

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolRecordingChat:
        self.bound.append([getattr(t, "name", "") for t in tools])
        return self


def lc_call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def script_handle(messages: list[BaseMessage]) -> str:
    """The handle an argument stand-in names, as the model reads it (``ctx:<id>#args.content``)."""
    for message in messages:
        if isinstance(message, AIMessage):
            for c in message.tool_calls:
                content = c["args"].get("content")
                if is_stand_in(content):
                    written = content.split()[2].rstrip(":")
                    assert written == f"ctx:{handle_of(content)}#args.content"
                    return written
    raise AssertionError("no argument stand-in in the conversation")


def test_langchain_multi_turn_session(context_dir: Path) -> None:
    @tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return listing(command)

    @tool
    def write_file(path: str, content: str, runtime: ToolRuntime) -> str:
        """Write a file."""
        assert runtime is not None
        return f"wrote {len(content)} characters to {path}"

    model = ToolRecordingChat(
        responses=[AIMessage(content="")],
        steps=[
            lc_call("shell", "s1", command="ls"),
            lc_call("write_file", "w1", path="app.py", content=SCRIPT),
            lc_call("shell", "s2", command="pytest"),
            lc_call("shell", "s3", command="git diff"),
            AIMessage(content="Fixed."),
            lc_call("shell", "s4", command="cat README"),
            lambda messages: lc_call("read_context", "r1", id=script_handle(messages)),  # the handle as shown
            AIMessage(content="Documented."),
        ],
        received=[],
        bound=[],
    )
    agent = create_agent(
        model, [shell, write_file], middleware=[ToolContextMiddleware(**OPTIONS)], checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "thread-7"}}
    with session(context_dir) as s:
        agent.invoke({"messages": [HumanMessage("Fix the handler.")]}, config)
        state = agent.invoke({"messages": [HumanMessage("Now the docs.")]}, config)
        pointers = {p.call_id: p for p in s.get_all_pointers()}
        stored = {c.call_id: c for c in s.load_contexts(list(pointers.values()))}

    assert set(pointers) == {"s1", "w1", "s2", "s3", "s4"}  # read_context calls are not stored
    assert stored["w1"].args == {"path": "app.py", "content": SCRIPT}  # the injected runtime is not stored
    assert pointers["s1"].query_id == toolctx.hash_query("Fix the handler.")
    assert pointers["s4"].query_id == toolctx.hash_query("Now the docs.")
    assert pointers["s4"].task_id == "thread-7"

    assert "read_context" not in model.bound[0]  # no stand-in yet: no definition to pay for
    assert "read_context" in model.bound[-1]
    read_back = [m for m in model.received[-1] if isinstance(m, ToolMessage)][-1]
    assert read_back.name == "read_context"
    assert read_back.content.split("\n", 1)[1] == SCRIPT  # the argument, exactly

    last = model.received[-1]
    shown = {m.tool_call_id: m.content for m in last if isinstance(m, ToolMessage)}
    assert is_stand_in(shown["s1"])
    asked = {c["id"]: c["args"] for m in last if isinstance(m, AIMessage) for c in m.tool_calls}
    assert is_stand_in(asked["w1"]["content"])
    assert asked["w1"]["path"] == "app.py"
    for index, message in enumerate(last):  # every result right after the call that asked for it
        if isinstance(message, ToolMessage):
            asker = next(m for m in reversed(last[:index]) if isinstance(m, AIMessage))
            assert message.tool_call_id in {c["id"] for c in asker.tool_calls}
    # a stand-in shown once is shown the same way on every later call
    seen: dict[str, str] = {}
    for received in model.received:
        for m in received:
            if isinstance(m, ToolMessage) and is_stand_in(m.content) and m.tool_call_id in seen:
                assert seen[m.tool_call_id] == m.content
            if isinstance(m, ToolMessage):
                seen.setdefault(m.tool_call_id, m.content) if is_stand_in(m.content) else None
    # written back: the checkpointed state holds the stand-ins
    assert any(isinstance(m, ToolMessage) and is_stand_in(m.content) for m in state["messages"])


def test_agents_sdk_multi_turn_session(context_dir: Path) -> None:
    @function_tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return listing(command)

    @function_tool
    def write_file(ctx: RunContextWrapper[Any], path: str, content: str) -> str:
        """Write a file."""
        return f"wrote {len(content)} characters to {path}"

    def reads_the_script(call: Any) -> list[Any]:
        for item in call.input:
            if isinstance(item, dict) and item.get("type") == "function_call" and item.get("name") == "write_file":
                content = json.loads(item["arguments"])["content"]
                assert is_stand_in(content)
                handle = f"ctx:{handle_of(content)}"
                return [function_call("read_context", {"id": handle, "part": "args.content"}, call_id="r1")]
        raise AssertionError("no write_file call in the input")

    model = ScriptedModel(
        [
            [function_call("shell", {"command": "ls"}, call_id="s1")],
            [function_call("write_file", {"path": "app.py", "content": SCRIPT}, call_id="w1")],
            [function_call("shell", {"command": "pytest"}, call_id="s2")],
            [function_call("shell", {"command": "git diff"}, call_id="s3")],
            [assistant_message("Fixed.")],
            [function_call("shell", {"command": "cat README"}, call_id="s4")],
            ModelStep.respond(reads_the_script),
            [assistant_message("Documented.")],
        ]
    )
    agent = Agent(name="coder", model=model, tools=[*persist_tools([shell, write_file]), read_context])
    config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_tool_outputs(**OPTIONS))
    conversation = SQLiteSession("conversation-1")

    async def run() -> None:
        await Runner.run(agent, "Fix the handler.", session=conversation, run_config=config)
        await Runner.run(agent, "Now the docs.", session=conversation, run_config=config)

    with session(context_dir) as s:
        s.conversation = "conversation-1"  # (the session serves this conversation alone: turns read each other's)
        try:
            asyncio.run(run())
        finally:
            conversation.close()
        pointers = {p.call_id: p for p in s.get_all_pointers()}
        stored = {c.call_id: c for c in s.load_contexts(list(pointers.values()))}

    assert set(pointers) == {"s1", "w1", "s2", "s3", "s4"}
    assert stored["w1"].args == {"path": "app.py", "content": SCRIPT}  # the run context is not an argument
    assert pointers["s1"].query_id == toolctx.hash_query("Fix the handler.")
    assert pointers["s4"].query_id == toolctx.hash_query("Now the docs.")

    names = [[t.name for t in call.tools] for call in model.calls]
    assert "read_context" not in names[0]
    assert "read_context" in names[-1]
    last = model.calls[-1].input
    items = [i for i in last if isinstance(i, dict)]
    outputs = {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}
    assert str(outputs["r1"]).split("\n", 1)[1] == SCRIPT
    assert is_stand_in(outputs["s1"])
    call_ids = [i["call_id"] for i in items if i.get("type") == "function_call"]
    assert call_ids == list(outputs)  # every call keeps its output, in order
    assert re.search(r"ctx:[0-9a-z]+", outputs["s1"])


def test_persist_tool_stores_only_what_the_model_passed(context_dir: Path) -> None:
    @tool
    def note(text: str, runtime: ToolRuntime) -> str:
        """Note something."""
        return f"noted {text} as {runtime.tool_call_id}"

    model = ScriptedChat(
        responses=[AIMessage(content="")], steps=[lc_call("note", "n1", text="hello"), AIMessage("ok")], received=[]
    )
    agent = create_agent(model, [persist_tool(note)])
    with session(context_dir) as s:
        agent.invoke({"messages": [HumanMessage("note hello")]})
        [stored] = s.load_contexts(s.get_all_pointers())
    assert stored.args == {"text": "hello"}
    assert stored.result == "noted hello as n1"


THOUGHT = "I think the handler table is built at import time, so the fix belongs in the loader. " * 6


def text_handle(texts: list[str]) -> str:
    for text in texts:
        if is_stand_in(text) and "assistant text" in text:
            return f"ctx:{handle_of(text)}"
    raise AssertionError("no assistant text stand-in in the conversation")


def test_langchain_old_assistant_text_is_compacted_restorably(context_dir: Path) -> None:
    @tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return listing(command)

    def thinking(call_id: str, command: str) -> AIMessage:
        return AIMessage(
            content=f"{call_id}: {THOUGHT}", tool_calls=[{"name": "shell", "args": {"command": command}, "id": call_id}]
        )

    def reads_the_thought(messages: list[BaseMessage]) -> AIMessage:
        handle = text_handle([m.content for m in messages if isinstance(m, AIMessage) and isinstance(m.content, str)])
        return lc_call("read_context", "r1", id=handle)

    model = ToolRecordingChat(
        responses=[AIMessage(content="")],
        steps=[*(thinking(f"s{i}", f"cat part{i}") for i in range(6)), reads_the_thought, AIMessage(content="Done.")],
        received=[],
        bound=[],
    )
    agent = create_agent(model, [shell], middleware=[ToolContextMiddleware(**OPTIONS)], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "thread-9"}}
    with session(context_dir):
        state = agent.invoke({"messages": [HumanMessage("Fix the loader.")]}, config)

    last = model.received[-1]
    said = [m for m in last if isinstance(m, AIMessage)]
    assert is_stand_in(said[0].content)  # the oldest thought is a marker now
    assert said[0].tool_calls[0]["id"] == "s0"  # with its call, still paired with its result
    assert said[-2].content.startswith("s5: I think")  # the recent ones stay whole
    read_back = [m for m in last if isinstance(m, ToolMessage)][-1]
    assert read_back.name == "read_context"
    body = read_back.content.partition("\n")[2]
    assert body in {f"s{i}: {THOUGHT}" for i in range(6)}
    # written back: the checkpointed state holds the marker, and the next turn sends it unchanged
    assert any(isinstance(m, AIMessage) and is_stand_in(m.content) for m in state["messages"])


def test_agents_sdk_old_assistant_text_is_compacted_restorably(context_dir: Path) -> None:
    @function_tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return listing(command)

    def reads_the_thought(call: Any) -> list[Any]:
        texts = [
            block["text"]
            for item in call.input
            if isinstance(item, dict) and item.get("role") == "assistant"
            for block in item.get("content") or []
            if isinstance(block, dict) and block.get("type") == "output_text"
        ]
        return [function_call("read_context", {"id": text_handle(texts)}, call_id="r1")]

    model = ScriptedModel(
        [
            *(
                [
                    assistant_message(f"s{i}: {THOUGHT}"),
                    function_call("shell", {"command": f"cat part{i}"}, call_id=f"s{i}"),
                ]
                for i in range(6)
            ),
            ModelStep.respond(reads_the_thought),
            [assistant_message("Done.")],
        ]
    )
    agent = Agent(name="coder", model=model, tools=[*persist_tools([shell]), read_context])
    # a group id scopes read_context: the stored text must be tagged with the conversation, as its calls are
    config = RunConfig(
        tracing_disabled=True, group_id="conversation-2", call_model_input_filter=compact_tool_outputs(**OPTIONS)
    )
    with session(context_dir):
        asyncio.run(Runner.run(agent, "Fix the loader.", run_config=config))

    last = [i for i in model.calls[-1].input if isinstance(i, dict)]
    said = [i for i in last if i.get("role") == "assistant"]
    assert is_stand_in(said[0]["content"][0]["text"])
    assert said[-1]["content"][0]["text"].startswith("s5: I think")
    outputs = {i["call_id"]: i["output"] for i in last if i.get("type") == "function_call_output"}
    body = str(outputs["r1"]).partition("\n")[2]
    assert body, outputs["r1"]
    assert body in {f"s{i}: {THOUGHT}" for i in range(6)}
    call_ids = [i["call_id"] for i in last if i.get("type") == "function_call"]
    assert call_ids == list(outputs)  # every call keeps its output, in order
