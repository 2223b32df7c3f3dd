"""A call is found by its conversation and its own identity: handles never cross, through the real loops.

Model servers that number calls per response (``call_0`` in every response), replayed or
client-supplied histories, one session serving several threads, runs without a thread or
group: in each, every handle the model is shown reads back the output of the very call
it stands for, and no model input holds text of another conversation's output.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from toolctx_langchain import ToolContextMiddleware
from toolctx_openai_agents import compact_tool_outputs, persist_tools, read_context

import toolctx
from toolctx import session
from toolctx.assembly import ContextAssembler, ToolOutputPlugin
from toolctx.compaction import handle_of, is_stand_in
from toolctx.compaction import read_context as read_stored

from .test_langchain import chat

HANDLE = re.compile(r"ctx:([0-9a-z]+)")
COMPACT = {"high_water": 500, "low_water": 0, "min_gain": 0, "cached_price": 1.0, "keep": 1}


def output(owner: str, n: int) -> str:
    """A big output that names who made it: ``OUT-<owner>-<n>`` on every line."""
    return "".join(f"OUT-{owner}-{n} line {i}: figures\n" for i in range(150))


@tool
def fetch(owner: str, n: int) -> str:
    """Fetch a report."""
    return output(owner, n)


def numbered_per_response(owner: str, count: int) -> list[Any]:
    """What a model server numbering calls per response asks for: ``call_0`` in every response."""
    steps: list[Any] = [
        AIMessage(content="", tool_calls=[{"name": "fetch", "args": {"owner": owner, "n": n}, "id": "call_0"}])
        for n in range(count)
    ]
    return [*steps, AIMessage(content="done")]


def shown_handles(messages: list[BaseMessage]) -> Iterator[tuple[str, str]]:
    """(handle, the output its tool message answered) for every stand-in the model was shown."""
    asked: dict[str, str] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                asked[call["id"] or ""] = output(call["args"]["owner"], call["args"]["n"])
        elif isinstance(message, ToolMessage) and is_stand_in(message.content):
            yield f"ctx:{handle_of(str(message.content))}", asked[message.tool_call_id]


def assert_each_handle_reads_its_own(s: toolctx.ContextSession, received: list[list[BaseMessage]], scope: Any) -> int:
    checked = 0
    for messages in received:
        for ref, expected in shown_handles(messages):
            text = read_stored(s, ref, 0, 10**9, scope=scope)
            assert text.partition("\n")[2] == expected, (ref, text[:200])
            checked += 1
    return checked


def test_per_response_numbering_in_one_thread_never_reads_another_call(context_dir: Path) -> None:
    model = chat(*numbered_per_response("a", 6))
    agent = create_agent(model, [fetch], middleware=[ToolContextMiddleware(**COMPACT)])
    with session(context_dir) as s:
        agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t1"}})
        assert assert_each_handle_reads_its_own(s, model.received, "t1") >= 4


def test_two_threads_of_one_session_numbering_alike_keep_apart(context_dir: Path) -> None:
    with session(context_dir) as s:
        received: dict[str, list[list[BaseMessage]]] = {}
        for owner in ("a", "b"):
            model = chat(*numbered_per_response(owner, 4))
            agent = create_agent(model, [fetch], middleware=[ToolContextMiddleware(session=s, **COMPACT)])
            agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": owner}})
            received[owner] = model.received
        for owner, other in (("a", "b"), ("b", "a")):
            assert assert_each_handle_reads_its_own(s, received[owner], owner) >= 2
            shown = " ".join(str(m.content) for messages in received[owner] for m in messages)
            assert f"OUT-{other}-" not in shown


def test_a_client_supplied_history_reusing_another_threads_call_id_shows_its_own_output(context_dir: Path) -> None:
    with session(context_dir) as s:
        first = chat(*numbered_per_response("a", 3))
        agent = create_agent(first, [fetch], middleware=[ToolContextMiddleware(session=s, **COMPACT)])
        agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "a"}})
        # Thread b arrives with a history of its own that reuses thread a's call ids.
        history: list[BaseMessage] = [HumanMessage("earlier")]
        for n in range(3):
            history.append(
                AIMessage(content="", tool_calls=[{"name": "fetch", "args": {"owner": "b", "n": n}, "id": "call_0"}])
            )
            history.append(ToolMessage(content=output("b", n), tool_call_id="call_0", name="fetch"))
        second = chat(AIMessage(content="done"))
        agent = create_agent(second, [fetch], middleware=[ToolContextMiddleware(session=s, **COMPACT)])
        agent.invoke({"messages": [*history, HumanMessage("and now?")]}, {"configurable": {"thread_id": "b"}})
        shown = " ".join(str(m.content) for m in second.received[-1])
        assert "OUT-a-" not in shown
        assert any(is_stand_in(m.content) for m in second.received[-1] if isinstance(m, ToolMessage))
        assert assert_each_handle_reads_its_own(s, second.received, "b") >= 1


def test_runs_without_a_thread_read_back_only_their_own(context_dir: Path) -> None:
    # A stateless agent server: the default session, no thread id. Run 2's model tries run 1's handle.
    stolen: dict[str, str] = {}

    def steal(messages: list[BaseMessage]) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": "read_context", "args": {"id": stolen["ref"]}, "id": "r"}])

    first = chat(*numbered_per_response("a", 3))
    second = chat(*numbered_per_response("b", 1)[:1], steal, AIMessage(content="done"))
    with session(context_dir):
        create_agent(first, [fetch], middleware=[ToolContextMiddleware(**COMPACT)]).invoke(
            {"messages": [HumanMessage("go")]}
        )
        refs = [ref for messages in first.received for ref, _ in shown_handles(messages)]
        assert refs
        stolen["ref"] = refs[0]
        result = create_agent(second, [fetch], middleware=[ToolContextMiddleware(**COMPACT)]).invoke(
            {"messages": [HumanMessage("go")]}
        )
        answer = next(m for m in result["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "r")
        assert str(answer.content).startswith("No stored output")
        assert "OUT-a-" not in " ".join(str(m.content) for messages in second.received for m in messages)


# -- the Agents SDK ---------------------------------------------------------------------------


@function_tool
def fetch_sdk(owner: str, n: int) -> str:
    """Fetch a report."""
    return output(owner, n)


def sdk_steps(owner: str, count: int, first: int = 0) -> list[Any]:
    """One call a step, numbered from 0 in each run (the SDK refuses an id reused within a run)."""
    return [[function_call("fetch_sdk", {"owner": owner, "n": first + n}, call_id=f"call_{n}")] for n in range(count)]


def sdk_handles(model: ScriptedModel) -> Iterator[tuple[str, str]]:
    """(handle, the output its item answered) for every stand-in a model call was shown."""
    for call in model.calls:
        asked: dict[str, str] = {}  # call id -> what its latest call asked for
        for item in call.input:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                args = json.loads(item["arguments"])
                asked[item["call_id"]] = output(args["owner"], args["n"])
            elif item.get("type") == "function_call_output" and is_stand_in(str(item["output"])):
                yield f"ctx:{handle_of(str(item['output']))}", asked[item["call_id"]]


def run_sdk(agent: Agent[Any], **config: Any) -> None:
    asyncio.run(Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True, **config)))


@pytest.mark.parametrize("group", [None, "conversation-1"])
def test_sdk_turns_numbering_calls_alike_never_read_another_call(context_dir: Path, group: str | None) -> None:
    # Two turns of one conversation (an SDK session), each run numbering its calls from call_0.
    done = [assistant_message("done")]
    model = ScriptedModel([*sdk_steps("a", 4), done, *sdk_steps("a", 4, first=4), done])
    agent = Agent(name="a", model=model, tools=[*persist_tools([fetch_sdk]), read_context])
    history = SQLiteSession("conversation-1")
    config = RunConfig(tracing_disabled=True, group_id=group, call_model_input_filter=compact_tool_outputs(**COMPACT))
    with session(context_dir) as s:
        if group is None:
            s.conversation = "conversation-1"  # (the session serves this conversation alone)
        for _ in range(2):
            asyncio.run(Runner.run(agent, "go", session=history, run_config=config))
        history.close()
        found = list(sdk_handles(model))
        assert len(found) >= 6
        for ref, expected in found:
            assert read_stored(s, ref, 0, 10**9, scope="conversation-1").partition("\n")[2] == expected


def test_sdk_runs_without_a_group_read_back_only_their_own(context_dir: Path) -> None:
    first = ScriptedModel([*sdk_steps("a", 3), [assistant_message("done")]])
    with session(context_dir):
        agent = Agent(name="a", model=first, tools=[*persist_tools([fetch_sdk], max_output_tokens=100), read_context])
        run_sdk(agent)
        ref = HANDLE.search(str(first.calls[-1].input))
        assert ref is not None

        answers: list[str] = []

        def read_it(call: Any) -> list[Any]:
            return [function_call("read_context", {"id": ref.group(0)}, call_id="r")]

        def done(call: Any) -> list[Any]:
            answers.extend(
                str(i["output"]) for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"
            )
            return []

        second = ScriptedModel([ModelStep.respond(read_it), ModelStep.respond(done), [assistant_message("done")]])
        run_sdk(Agent(name="b", model=second, tools=[read_context]))
        assert answers
        assert answers[0].startswith("No stored output")


# -- the assembler ----------------------------------------------------------------------------


def test_two_assemblers_sharing_a_session_and_call_ids_each_read_their_own(context_dir: Path) -> None:
    with session(context_dir) as s:
        plugins = {}
        for owner in ("a", "b"):
            plugin = ToolOutputPlugin(session=s, max_output_tokens=100)
            ctx = ContextAssembler(session=s, plugins=[plugin])
            ctx.add_message("user", "go")
            ctx.add_message("assistant", "", tool_calls=[{"id": "call_0", "name": "fetch", "arguments": {"o": owner}}])
            ctx.add_tool_result("call_0", output(owner, 0))
            plugins[owner] = (ctx, plugin)
        for owner, other in (("a", "b"), ("b", "a")):
            ctx, plugin = plugins[owner]
            [result] = [m for m in ctx.get_history() if m.role == "tool"]
            assert is_stand_in(result.content)
            ref = f"ctx:{handle_of(result.content)}"
            assert plugin.read(ref, 0, 10**9).partition("\n")[2] == output(owner, 0)
            theirs = next(m for m in plugins[other][0].get_history() if m.role == "tool")
            assert plugin.read(f"ctx:{handle_of(theirs.content)}").startswith("No stored output")


def test_sdk_conversations_read_back_across_turns_and_never_across_conversations(context_dir: Path) -> None:
    # Conversations.open(sdk_session), a group_id for tracing, tracing off: the filter is told neither, and
    # still finds what the tools stored; turn 2 reads turn 1's handle; the other conversation reads nothing.
    conversations = toolctx.Conversations(context_dir)
    handles: dict[str, str] = {}
    answers: dict[str, str] = {}

    def read(owner: str, ref: str) -> Any:
        def step(call: Any) -> list[Any]:
            return [function_call("read_context", {"id": ref or handles[owner]}, call_id="r")]

        return ModelStep.respond(step)

    def keep(owner: str) -> Any:
        def step(call: Any) -> list[Any]:
            answers[owner] = next(
                str(i["output"])
                for i in call.input
                if isinstance(i, dict) and i.get("call_id") == "r" and i.get("type") == "function_call_output"
            )
            return [assistant_message("done")]

        return ModelStep.respond(step)

    try:
        for owner in ("a", "b"):
            history = SQLiteSession(f"conversation-{owner}")
            model = ScriptedModel([*sdk_steps(owner, 2), [assistant_message("done")], read(owner, ""), keep(owner)])
            agent = Agent(
                name=owner, model=model, tools=[*persist_tools([fetch_sdk], max_output_tokens=100), read_context]
            )
            config = RunConfig(
                tracing_disabled=True,
                group_id=f"group-{owner}",
                call_model_input_filter=compact_tool_outputs(**COMPACT),
            )
            with conversations.open(history):
                asyncio.run(Runner.run(agent, "go", session=history, run_config=config))
                handles[owner] = HANDLE.search(str(model.calls[-1].input)).group(0)  # type: ignore[union-attr]
                asyncio.run(Runner.run(agent, "again", session=history, run_config=config))
            history.close()
            assert answers[owner].partition("\n")[2].startswith(f"OUT-{owner}-")
        for owner, other in (("a", "b"), ("b", "a")):  # a third turn of each tries the other's handle
            history = SQLiteSession(f"conversation-{owner}")
            model = ScriptedModel([read(owner, handles[other]), keep(owner)])
            agent = Agent(name=owner, model=model, tools=[read_context])
            config = RunConfig(tracing_disabled=True, group_id=f"group-{owner}")
            with conversations.open(history):
                asyncio.run(Runner.run(agent, "theirs?", session=history, run_config=config))
            history.close()
            assert answers[owner].startswith("No stored output")
    finally:
        conversations.close()
