"""The assembler as the model input of LangChain's create_agent and of the Agents SDK's Runner, offline."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from toolctx_langchain import AssemblerMiddleware
from toolctx_openai_agents import assembled_input, persist_tools, read_context

import toolctx
from toolctx.assembly import ContextAssembler, PlanPlugin, ToolOutputPlugin
from toolctx.compaction import handle_of, is_stand_in
from toolctx.compaction import read_context as read_stored

from .conftest import orphans

OUTPUT = "".join(f"row {i}: value {i * 7}\n" for i in range(120))  # about 2,000 characters


class ScriptedChat(FakeMessagesListChatModel):
    """Answers each call with the next scripted message (or what a scripted function of the messages sent
    returns) and records what it was sent."""

    steps: list[Any]
    received: list[list[BaseMessage]]

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChat:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.received.append(list(messages))
        step = self.steps[len(self.received) - 1]
        self.responses = [step(messages) if callable(step) else step]
        self.i = 0
        return super()._generate(messages, stop, run_manager, **kwargs)


@tool
def table(n: int) -> str:
    """Rows of a table."""
    return OUTPUT


def as_openai(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, ToolMessage):
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        else:
            calls = [{"id": c["id"]} for c in getattr(m, "tool_calls", [])]
            out.append({"role": m.type, "content": m.content, "tool_calls": calls})
    return out


def assembler(s: toolctx.ContextSession) -> tuple[ContextAssembler, PlanPlugin]:
    ctx = ContextAssembler(max_tokens=3000, session=s, preserve_recent=4)
    plan = ctx.register_plugin(PlanPlugin({"goal": "sum the tables", "tasks": [{"id": "1", "description": "read"}]}))
    ctx.register_plugin(ToolOutputPlugin(session=s, high_water=10**9, keep=2, max_output_tokens=100_000))
    return ctx, plan


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_create_agent_sends_what_the_assembler_prepared(tmp_path: Path, use_async: bool) -> None:
    steps: list[Any] = [
        AIMessage(content="", tool_calls=[{"name": "table", "args": {"n": i}, "id": f"t{i}"}]) for i in range(10)
    ]
    steps.append(AIMessage(content="The sum is 42."))
    model = ScriptedChat(responses=[AIMessage(content="")], steps=steps, received=[])
    with toolctx.session(tmp_path / "ctx") as s:
        ctx, _ = assembler(s)
        agent = create_agent(
            model,
            [table],
            system_prompt="You add numbers.",
            middleware=[AssemblerMiddleware(ctx, max_output_tokens=100_000)],
        )
        payload = {"messages": [HumanMessage("Sum every table.")]}
        result = asyncio.run(agent.ainvoke(payload)) if use_async else agent.invoke(payload)
        assert result["messages"][-1].content == "The sum is 42."
        assert len(result["messages"]) == 22  # the agent's state keeps every message whole
        assert all(m.content == OUTPUT for m in result["messages"] if isinstance(m, ToolMessage))
        last = model.received[-1]
        assert isinstance(last[0], SystemMessage)
        assert last[0].content == "You add numbers."
        assert isinstance(last[-1], SystemMessage)
        assert last[-1].content.startswith("<plan>\nGoal: sum the tables")
        assert last[1].content == "Sum every table."  # the current input is never compacted
        assert orphans(as_openai(last[1:-1])) == 0
        shown = [m for m in last if isinstance(m, ToolMessage | HumanMessage)]
        handles = {handle_of(str(m.content)) for m in shown if is_stand_in(m.content)} - {None}
        assert handles  # old results (or old turns) left the prompt as stand-ins...
        for pointer_id in handles:  # ...and every one reads back
            assert "[ctx:" in read_stored(s, f"ctx:{pointer_id}", 0, 100)
        assert ctx.get_metrics()["prepares"] == 11
        assert len(ctx.get_history()) == 21


def test_the_agents_sdk_runner_sends_what_the_assembler_prepared(tmp_path: Path) -> None:
    @function_tool
    def sdk_table(n: int) -> str:
        """Rows of a table."""
        return OUTPUT

    steps: list[Any] = [[function_call("sdk_table", {"n": i}, call_id=f"c{i}")] for i in range(10)]
    steps.append([assistant_message("The sum is 42.")])
    model = ScriptedModel(steps)
    with toolctx.session(tmp_path / "ctx") as s:
        ctx, _ = assembler(s)
        agent = Agent(
            name="adder",
            instructions="You add numbers.",
            model=model,
            tools=[*persist_tools([sdk_table], max_output_tokens=100_000), read_context],
        )
        config = RunConfig(tracing_disabled=True, call_model_input_filter=assembled_input(ctx))
        result = asyncio.run(Runner.run(agent, "Sum every table.", run_config=config, max_turns=20))
        assert result.final_output == "The sum is 42."
        last = model.calls[-1]
        items = [dict(i) if isinstance(i, dict) else i for i in last.input]
        assert last.system_instructions == "You add numbers."
        assert items[-1]["content"].startswith("<plan>")
        outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        calls = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call"]
        assert {o["call_id"] for o in outputs} == {c["call_id"] for c in calls}
        shown = [o["output"] for o in outputs] + [
            i.get("content") for i in items if isinstance(i, dict) and "role" in i
        ]
        assert any(is_stand_in(text) for text in shown)  # old results or old turns left the prompt restorably
        assert outputs[-1]["output"] == OUTPUT
        assert ctx.get_budget().used <= 3000


def test_a_new_middleware_each_turn_over_one_assembler_still_assembles(tmp_path: Path) -> None:
    """A server that builds its agent per request: the assembler's history was filled by the previous middleware."""
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "chat-1"}}
    with toolctx.session(tmp_path / "ctx") as s:
        ctx, _ = assembler(s)
        for turn in range(2):
            model = ScriptedChat(
                responses=[AIMessage(content="")],
                steps=[
                    AIMessage(content="", tool_calls=[{"name": "table", "args": {"n": turn}, "id": f"t{turn}"}]),
                    AIMessage(content=f"answer {turn}"),
                ],
                received=[],
            )
            agent = create_agent(
                model, [table], middleware=[AssemblerMiddleware(ctx, max_output_tokens=100_000)], checkpointer=saver
            )
            result = agent.invoke({"messages": [HumanMessage(f"question {turn}")]}, config)
            assert result["messages"][-1].content == f"answer {turn}"
            last = model.received[-1]
            assert last[-1].content.startswith("<plan>")  # assembled, not sent as it was
        assert [m.content for m in last if isinstance(m, HumanMessage)][-1] == "question 1"


def test_a_providers_own_tool_is_sent_but_not_counted(tmp_path: Path) -> None:
    model = ScriptedChat(responses=[AIMessage(content="")], steps=[AIMessage(content="fine")], received=[])
    with toolctx.session(tmp_path / "ctx") as s:
        ctx, _ = assembler(s)
        agent = create_agent(
            model,
            [table, {"type": "web_search_preview"}],
            middleware=[AssemblerMiddleware(ctx, max_output_tokens=100_000)],
        )
        result = agent.invoke({"messages": [HumanMessage("hello")]})
        assert [t["function"]["name"] for t in ctx.get_tools()] == ["table"]
    assert result["messages"][-1].content == "fine"
    assert model.received[0][-1].content.startswith("<plan>")  # assembled


def test_a_conversation_the_assembler_cannot_take_is_sent_as_it_is(tmp_path: Path) -> None:
    """Arguments the assembler refuses (an infinite number, not JSON): the model still gets its call, whole."""
    asked = AIMessage(content="", tool_calls=[{"name": "table", "args": {"n": float("inf")}, "id": "t1"}])
    model = ScriptedChat(responses=[AIMessage(content="")], steps=[AIMessage(content="fine")], received=[])
    with toolctx.session(tmp_path / "ctx") as s:
        ctx, _ = assembler(s)
        agent = create_agent(model, [table], middleware=[AssemblerMiddleware(ctx, max_output_tokens=100_000)])
        history = [HumanMessage("hello"), asked, ToolMessage("rows", tool_call_id="t1"), HumanMessage("and?")]
        with pytest.warns(toolctx.ToolctxWarning, match="could not assemble"):
            result = agent.invoke({"messages": history})
    assert result["messages"][-1].content == "fine"
    assert [m.content for m in model.received[0]] == ["hello", "", "rows", "and?"]


def test_a_new_input_filter_each_run_over_one_assembler_still_assembles(tmp_path: Path) -> None:
    from agents import SQLiteSession

    @function_tool
    def sdk_rows(n: int) -> str:
        """Rows of a table."""
        return OUTPUT

    conversation = SQLiteSession("chat-1")
    with toolctx.session(tmp_path / "ctx") as s:
        ctx, _ = assembler(s)
        for turn in range(2):
            model = ScriptedModel(
                [[function_call("sdk_rows", {"n": turn}, call_id=f"c{turn}")], [assistant_message(f"answer {turn}")]]
            )
            agent = Agent(name="a", model=model, tools=[*persist_tools([sdk_rows], max_output_tokens=100_000)])
            config = RunConfig(tracing_disabled=True, call_model_input_filter=assembled_input(ctx))
            result = asyncio.run(Runner.run(agent, f"question {turn}", session=conversation, run_config=config))
            assert result.final_output == f"answer {turn}"
            items = [dict(i) if isinstance(i, dict) else i for i in model.calls[-1].input]
            assert str(items[-1]["content"]).startswith("<plan>")  # assembled, not sent as it was


class ToolsRecordingChat(ScriptedChat):
    """:class:`ScriptedChat` that also records the names of the tools bound for each call."""

    bound: list[list[str]]

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChat:
        self.bound.append([t["name"] if isinstance(t, dict) else t.name for t in tools])
        return self


@tool
def big_table(n: int) -> str:
    """Rows of a big table."""
    return OUTPUT * 6


def test_a_stand_in_made_at_tool_time_is_offered_read_context_without_a_tool_output_plugin(tmp_path: Path) -> None:
    """The tool hook stands in for a big output whatever the assembler's plugins: the model is then given the
    tool that reads the stand-in back, although no ToolOutputPlugin offers it."""
    steps: list[Any] = [
        AIMessage(content="", tool_calls=[{"name": "big_table", "args": {"n": 1}, "id": "t1"}]),
        AIMessage(content="Read it."),
    ]
    model = ToolsRecordingChat(responses=[AIMessage(content="")], steps=steps, received=[], bound=[])
    with toolctx.session(tmp_path / "ctx") as s:
        ctx = ContextAssembler(max_tokens=100_000, session=s)  # (no plugin at all)
        agent = create_agent(model, [big_table], middleware=[AssemblerMiddleware(ctx, max_output_tokens=500)])
        agent.invoke({"messages": [HumanMessage("Look at the big table.")]})
        [shown] = [m for m in model.received[-1] if isinstance(m, ToolMessage)]
        assert is_stand_in(shown.content)
        assert "read_context" not in model.bound[0]  # (nothing to read back yet)
        assert "read_context" in model.bound[-1]
        pointer_id = handle_of(str(shown.content))
        assert read_stored(s, f"ctx:{pointer_id}", 0, 100_000).partition("\n")[2] == OUTPUT * 6


def test_the_model_reads_back_the_assemblers_markers_of_old_history(tmp_path: Path) -> None:
    """The assembler stores old history under its own conversation id, the middleware's tool calls under the
    thread: the middleware's read_context reads both, so every marker the model is shown reads back."""
    import re

    asked: list[str] = []

    def read_every_handle(messages: list[BaseMessage]) -> AIMessage:
        text = " ".join(str(m.content) for m in messages if not isinstance(m, AIMessage))
        asked.extend(sorted(set(re.findall(r"ctx:[a-z]{10}", text))))
        calls = [{"name": "read_context", "args": {"id": h}, "id": f"r{i}"} for i, h in enumerate(asked)]
        return AIMessage(content="", tool_calls=calls)

    steps: list[Any] = [
        AIMessage(content="", tool_calls=[{"name": "table", "args": {"n": i}, "id": f"t{i}"}]) for i in range(10)
    ]
    script = [*steps, read_every_handle, AIMessage(content="done")]
    model = ScriptedChat(responses=[AIMessage(content="")], steps=script, received=[])
    with toolctx.session(tmp_path / "ctx") as s:
        ctx, _ = assembler(s)
        agent = create_agent(model, [table], middleware=[AssemblerMiddleware(ctx, max_output_tokens=100_000)])
        out = agent.invoke({"messages": [HumanMessage("Sum every table.")]}, {"configurable": {"thread_id": "t1"}})
        answers = {m.tool_call_id: str(m.content) for m in out["messages"] if isinstance(m, ToolMessage)}
        markers = [h for h in asked if s.load_contexts([h[4:]])[0].tool_name == "conversation_history"]
        assert markers  # (the assembler did put old history away)
        for i, handle in enumerate(asked):
            assert answers[f"r{i}"].startswith(f"[{handle} characters 0-"), answers[f"r{i}"][:120]
