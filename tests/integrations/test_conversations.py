"""Sessions that follow the conversation: handles read back in later turns and processes, never elsewhere."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from langchain.agents import create_agent
from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from toolctx_langchain import ToolContextMiddleware
from toolctx_openai_agents import compact_tool_outputs, persist_tools, read_context

import toolctx
import toolctx.testing
from toolctx import Conversations
from toolctx.compaction import handle_of, is_stand_in

from .test_langchain import BIG, ScriptedChat, call, chat, fetch_report, handle_in, lookup

ROOT = Path(__file__).resolve().parents[2]


def read_back(messages: list[BaseMessage]) -> str:
    """The text read_context returned, without its header line."""
    last = [m for m in messages if isinstance(m, ToolMessage)][-1]
    assert last.name == "read_context", last
    return str(last.content)


def test_a_handle_from_turn_one_reads_back_in_turn_two_after_a_restart(context_dir: Path) -> None:
    """Each turn gets a new Conversations, middleware and agent (as a new process would); the thread persists."""
    saver = InMemorySaver()
    shown: dict[str, str] = {}

    def turn(steps: list[Any], text: str, thread: str) -> list[BaseMessage]:
        conversations = Conversations(context_dir)
        model = chat(*steps)
        middleware = ToolContextMiddleware(session=conversations)
        agent = create_agent(model, [fetch_report], middleware=[middleware], checkpointer=saver)
        try:
            agent.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread}})
        finally:
            conversations.close()
        return model.received[-1]

    def remember(messages: list[BaseMessage]) -> AIMessage:
        shown["handle"] = handle_in(messages)
        return AIMessage("The report is in.")

    turn([call("fetch_report", "f1", region="emea"), remember], "Get the EMEA report.", "thread-a")
    last = turn(
        [lambda messages: call("read_context", "r1", id=shown["handle"], limit=len(BIG)), AIMessage("done")],
        "What did the report say?",
        "thread-a",
    )
    assert read_back(last).split("\n", 1)[1] == BIG

    other = turn(
        [lambda messages: call("read_context", "r2", id=shown["handle"]), AIMessage("done")], "Read it.", "thread-b"
    )
    assert read_back(other).startswith("No stored output")
    # the thread's outputs are in its own kept session, named from its id (thread-b stored nothing)
    assert [p.name for p in context_dir.iterdir()] == [Conversations.session_id("thread-a")]


def test_a_later_turn_is_offered_read_context_only_if_its_conversation_shows_a_stand_in(context_dir: Path) -> None:
    """Each turn as a new process runs it: read_context is offered again only where a stand-in was shown before."""
    saver = InMemorySaver()

    class ToolsSeen(ScriptedChat):
        """The scripted chat, recording the names of the tools each call was sent."""

        tools_seen: list[list[str]]

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            self.tools_seen.append(sorted(getattr(t, "name", "") for t in tools))
            return self

    def turn(steps: list[Any], thread: str) -> list[list[str]]:
        conversations = Conversations(context_dir)
        model = ToolsSeen(responses=[AIMessage(content="")], steps=steps, received=[], tools_seen=[])
        agent = create_agent(
            model, [fetch_report, lookup], middleware=[ToolContextMiddleware(session=conversations)], checkpointer=saver
        )
        try:
            agent.invoke({"messages": [HumanMessage("Look it up.")]}, {"configurable": {"thread_id": thread}})
        finally:
            conversations.close()
        return model.tools_seen

    small = [call("lookup", "l1", key="a"), AIMessage("done")]
    assert turn(small, "quiet") == [["fetch_report", "lookup"]] * 2
    again = [call("lookup", "l2", key="b"), AIMessage("done")]
    assert turn(again, "quiet") == [["fetch_report", "lookup"]] * 2  # resumed, and still nothing to read back
    big = [call("fetch_report", "f1", region="emea"), AIMessage("done")]
    assert turn(big, "busy")[-1] == ["fetch_report", "lookup", "read_context"]  # (a stand-in: offered)
    later = turn(again, "busy")
    assert all("read_context" in tools for tools in later)  # from its first call: offered before


def test_a_shared_session_still_keeps_threads_apart(context_dir: Path) -> None:
    """One session for every thread (the default of a server): read_context reads only its own thread's outputs."""
    saver = InMemorySaver()
    shown: dict[str, str] = {}

    def remember(messages: list[BaseMessage]) -> AIMessage:
        shown["handle"] = handle_in(messages)
        return AIMessage("ok")

    with toolctx.session(context_dir):
        first = create_agent(
            chat(call("fetch_report", "f1", region="emea"), remember),
            [fetch_report],
            middleware=[ToolContextMiddleware()],
            checkpointer=saver,
        )
        first.invoke({"messages": [HumanMessage("report")]}, {"configurable": {"thread_id": "alice"}})
        model = chat(lambda messages: call("read_context", "r1", id=shown["handle"]), AIMessage("done"))
        second = create_agent(model, [fetch_report], middleware=[ToolContextMiddleware()], checkpointer=saver)
        second.invoke({"messages": [HumanMessage("read it")]}, {"configurable": {"thread_id": "mallory"}})
        again = chat(lambda messages: call("read_context", "r2", id=shown["handle"], limit=100), AIMessage("done"))
        third = create_agent(again, [fetch_report], middleware=[ToolContextMiddleware()], checkpointer=saver)
        third.invoke({"messages": [HumanMessage("read it")]}, {"configurable": {"thread_id": "alice"}})

    refused = [m for m in model.received[-1] if isinstance(m, ToolMessage)][-1]
    unknown = "ctx:ffffffff"
    assert refused.content == toolctx.compaction.read_context(toolctx.ContextSession(context_dir), unknown).replace(
        repr(unknown), repr(shown["handle"])
    )  # the same answer as a handle that never existed: nothing learnt about the other thread
    allowed = [m for m in again.received[-1] if isinstance(m, ToolMessage)][-1]
    assert allowed.content.split("\n", 1)[1] == BIG[:100]


TURN_SCRIPT = """
import json, sys
from pathlib import Path
from langchain.agents import create_agent
from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware
from langchain_core.messages import AIMessage, HumanMessage, messages_from_dict, messages_to_dict
from toolctx_langchain import ToolContextMiddleware
from toolctx import Conversations
from tests.integrations.test_langchain import call, chat, fetch_report, handle_in

context_dir, history_file, turn = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
history = messages_from_dict(json.loads(history_file.read_text())) if history_file.exists() else []
if turn == "1":
    steps = [call("fetch_report", "f1", region="emea"), lambda m: AIMessage("handle " + handle_in(m))]
else:
    handle = next(str(m.content).split()[-1] for m in history if isinstance(m, AIMessage) and m.content)
    steps = [lambda m: call("read_context", "r1", id=handle, limit=100_000), AIMessage("done")]
middleware = ToolContextMiddleware(session=Conversations(context_dir))
agent = create_agent(chat(*steps), [fetch_report], middleware=[middleware])
state = agent.invoke({"messages": [*history, HumanMessage("turn " + turn)]}, {"configurable": {"thread_id": "t-1"}})
history_file.write_text(json.dumps(messages_to_dict(state["messages"])))
"""


def test_each_turn_in_a_new_process(context_dir: Path, tmp_path: Path) -> None:
    script = tmp_path / "turn.py"
    script.write_text(TURN_SCRIPT)
    history = tmp_path / "history.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for turn in ("1", "2"):
        subprocess.run(
            [sys.executable, str(script), str(context_dir), str(history), turn], check=True, env=env, cwd=ROOT
        )
    messages = json.loads(history.read_text())
    answers = [m["data"] for m in messages if m["type"] == "tool"]
    assert answers[-1]["name"] == "read_context"
    assert answers[-1]["content"].split("\n", 1)[1] == BIG


def test_agents_sdk_conversations_across_runs_and_restarts(context_dir: Path) -> None:
    @function_tool
    def fetch(region: str) -> str:
        """Fetch a region's report."""
        return BIG

    shown: dict[str, str] = {}

    def remember(data: Any) -> list[Any]:
        outputs = [i for i in data.input if isinstance(i, dict) and i.get("type") == "function_call_output"]
        shown["handle"] = str(outputs[-1]["output"]).split("ctx:", 1)[1].split()[0].rstrip(".,;:)]")
        return [assistant_message("ok")]

    def reads(call_id: str) -> ModelStep:
        return ModelStep.respond(
            lambda data: [function_call("read_context", {"id": "ctx:" + shown["handle"]}, call_id=call_id)]
        )

    def run(steps: list[Any], conversation_id: str) -> ScriptedModel:
        conversations = Conversations(context_dir)  # a new one per run, as in a new process
        model = ScriptedModel(steps)
        agent = Agent(name="analyst", model=model, tools=[*persist_tools([fetch]), read_context])
        config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_tool_outputs())
        history = SQLiteSession(conversation_id, str(context_dir.parent / "history.db"))
        try:
            with conversations.open(history):
                asyncio.run(Runner.run(agent, "go", session=history, run_config=config))
        finally:
            history.close()
            conversations.close()
        return model

    run([[function_call("fetch", {"region": "emea"}, call_id="f1")], ModelStep.respond(remember)], "chat-1")
    later = run([reads("r1"), [assistant_message("done")]], "chat-1")
    # another conversation, once it has stand-ins of its own (read_context is offered), asks for chat-1's handle
    elsewhere = run(
        [[function_call("fetch", {"region": "apac"}, call_id="f2")], reads("r2"), [assistant_message("done")]],
        "chat-2",
    )

    def answer(model: ScriptedModel) -> str:
        items = [i for i in model.calls[-1].input if isinstance(i, dict)]
        return str([i for i in items if i.get("type") == "function_call_output"][-1]["output"])

    text = answer(later).split("\n", 1)[1]
    assert len(text) > 1000
    assert text == BIG[: len(text)]
    assert answer(elsewhere).startswith("No stored output")


@pytest.mark.parametrize("toolctx_first", [True, False], ids=["toolctx-outside", "context-editing-outside"])
def test_beside_langchains_context_editing(context_dir: Path, toolctx_first: bool) -> None:
    """Whichever order the two run in, no toolctx handle is overwritten and every stand-in reads back."""

    @tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return "".join(f"{command}: src/module_{i}.py ok\n" for i in range(60))

    steps: list[Any] = [
        call("fetch_report", "f1", region="emea"),
        *[call("shell", f"s{i}", command=f"pytest -k t{i}") for i in range(6)],
        AIMessage("done"),
    ]
    model = chat(*steps)
    ours = ToolContextMiddleware(high_water=1500, low_water=0, keep=1, min_gain=0, cached_price=1.0)
    theirs = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=1000, keep=1)])
    agent = create_agent(model, [fetch_report, shell], middleware=[ours, theirs] if toolctx_first else [theirs, ours])
    with toolctx.session(context_dir) as s:
        agent.invoke({"messages": [HumanMessage("Run the tests.")]})
        first_shown: dict[str, str] = {}
        for received in model.received:
            for m in received:
                if not isinstance(m, ToolMessage):
                    continue
                if m.tool_call_id in first_shown:  # once shown, a handle is in every later call
                    assert is_stand_in(m.content), (m.tool_call_id, m.content)
                    assert handle_of(str(m.content)) == handle_of(first_shown[m.tool_call_id])
                elif is_stand_in(m.content):
                    first_shown[m.tool_call_id] = str(m.content)
        last = {m.tool_call_id: str(m.content) for m in model.received[-1] if isinstance(m, ToolMessage)}
        assert len(first_shown) >= 4, first_shown
        for call_id, shown in first_shown.items():
            [stored] = s.load_contexts([f"ctx:{handle_of(shown)}"])
            assert stored.call_id == call_id
        assert is_stand_in(last["f1"])


def test_context_editing_listed_after_toolctx_clears_what_toolctx_left_whole(context_dir: Path) -> None:
    """The documented order: toolctx first; LangChain's context editing still clears by its own rules."""

    @tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return "".join(f"{command}: src/module_{i}.py ok\n" for i in range(60))

    model = chat(*[call("shell", f"s{i}", command=f"pytest -k t{i}") for i in range(4)], AIMessage("done"))
    theirs = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=500, keep=1)])
    agent = create_agent(model, [shell], middleware=[ToolContextMiddleware(), theirs])  # (toolctx: no batch yet)
    with toolctx.session(context_dir) as s:
        agent.invoke({"messages": [HumanMessage("Run the tests.")]})
        assert len(s) == 4
    last = [str(m.content) for m in model.received[-1] if isinstance(m, ToolMessage)]
    assert last[:3] == ["[cleared]"] * 3
    assert last[3].startswith("pytest -k t3: ")


def test_the_before_model_call_hook_sees_every_call_and_never_breaks_it(context_dir: Path) -> None:
    seen: list[int] = []

    def hook(tokens: int) -> None:
        seen.append(tokens)
        if len(seen) == 2:
            raise RuntimeError("memory down")

    model = chat(call("fetch_report", "f1", region="emea"), call("fetch_report", "f2", region="apac"), AIMessage("ok"))
    agent = create_agent(model, [fetch_report], middleware=[ToolContextMiddleware(before_model_call=hook)])
    with toolctx.session(context_dir):
        agent.invoke({"messages": [HumanMessage("Get the reports.")]})
    assert len(seen) == len(model.received) == 3  # the raising call still reached the model
    assert seen[0] < seen[1] < seen[2]
    assert any("before_model_call" in w for w in toolctx.testing.escalated_warnings())
    with pytest.raises(TypeError, match="before_model_call"):
        ToolContextMiddleware(before_model_call="flash")  # type: ignore[arg-type]
