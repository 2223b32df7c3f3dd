"""ToolContextMiddleware in LangChain's real agent loop (create_agent), offline."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import InjectedToolCallId, StructuredTool, ToolException, tool
from langgraph.types import Command
from toolctx_langchain import ToolContextMiddleware, persist_tool

import toolctx
from toolctx import ConfigError, session
from toolctx.compaction import CompactionSettings, is_stand_in

BIG = "".join(f"line {i}: quarterly revenue figures for region {i % 7}\n" for i in range(800))  # ~40 KB

Step = Callable[[list[BaseMessage]], AIMessage]


class ScriptedChat(FakeMessagesListChatModel):
    """A chat model that answers each call with the next step, computed from what it was sent."""

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


def chat(*steps: Any) -> ScriptedChat:
    return ScriptedChat(responses=[AIMessage(content="")], steps=list(steps), received=[])


def call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def handle_in(messages: list[BaseMessage]) -> str:
    last = [m for m in messages if isinstance(m, ToolMessage)][-1]
    match = re.search(r"ctx:[0-9a-z]+", str(last.content))
    assert match, last.content
    return match.group(0)


@tool
def fetch_report(region: str) -> str:
    """Fetch the revenue report of a region."""
    return BIG


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key} " * 200


@tool
def broken(key: str) -> str:
    """Always fails."""
    raise ValueError(f"no such key: {key}")


def _refuse(key: str) -> str:
    """Fails with a message for the model."""
    raise ToolException(f"{key} is not available")


refused = StructuredTool.from_function(_refuse, name="refused", handle_tool_error=True)


def run(agent: Any, question: str, use_async: bool) -> dict[str, Any]:
    payload = {"messages": [HumanMessage(question)]}
    if use_async:
        return asyncio.run(agent.ainvoke(payload))  # type: ignore[no-any-return]
    return agent.invoke(payload)  # type: ignore[no-any-return]


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_big_output_reaches_the_model_as_a_stand_in_it_can_read_back(context_dir: Path, use_async: bool) -> None:
    model = chat(
        call("fetch_report", "c1", region="emea"),
        lambda messages: call("read_context", "c2", id=handle_in(messages), offset=100, limit=200),
        AIMessage(content="Revenue is up."),
    )
    agent = create_agent(model, [fetch_report], middleware=[ToolContextMiddleware(max_output_tokens=500)])
    with session(context_dir) as s:
        run(agent, "How did EMEA revenue do?", use_async)
        [pointer] = s.get_all_pointers()
        assert pointer.tool_name == "fetch_report"
        assert pointer.args == {"region": "emea"}
        assert pointer.call_id == "c1"
        assert pointer.query_id == toolctx.hash_query("How did EMEA revenue do?")
        [stored] = s.load_contexts([pointer])
        assert stored.result == BIG
        session_dir = s.session_dir
        assert s.save_path.settle(timeout=60)  # (an async hook's big output is written by a pool thread)
        assert session_dir.exists()

    second, third = model.received[1], model.received[2]
    seen = next(m for m in second if isinstance(m, ToolMessage))
    assert is_stand_in(seen.content)
    assert pointer.handle in seen.content
    assert len(seen.content) < len(BIG) / 10
    assert (
        count_tokens_approximately(second)
        < count_tokens_approximately([*second[:-1], ToolMessage(BIG, tool_call_id="c1")]) / 5
    )
    read_back = [m for m in third if isinstance(m, ToolMessage)][-1]
    assert read_back.name == "read_context"
    assert read_back.content.endswith(BIG[100:300])
    assert "characters 100-300" in read_back.content
    assert not session_dir.exists()  # leaving the session removed what it stored


def test_read_context_returns_the_exact_original(context_dir: Path) -> None:
    model = chat(
        call("fetch_report", "c1", region="emea"),
        lambda messages: call("read_context", "c2", id=handle_in(messages), limit=100_000),
        AIMessage(content="done"),
    )
    agent = create_agent(model, [fetch_report], middleware=[ToolContextMiddleware(max_output_tokens=500)])
    with session(context_dir):
        run(agent, "q", False)
    read_back = [m for m in model.received[2] if isinstance(m, ToolMessage)][-1]
    header, body = read_back.content.split("\n", 1)
    assert body == BIG
    assert f"of {len(BIG):,}" in header


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"id": "ctx:0000000000"}, "No stored output"),
        ({"id": "nonsense"}, "No stored output"),
        ({"id": "HANDLE", "offset": 10**9}, "past the end"),
        ({"id": "HANDLE", "offset": -1}, "offset must be"),
        ({"id": "HANDLE", "limit": 0}, "limit must be"),
        ({"id": ""}, "needs the id"),
    ],
)
def test_read_context_answers_bad_requests_with_a_message(
    context_dir: Path, arguments: dict[str, Any], message: str
) -> None:
    def bad_read(messages: list[BaseMessage]) -> AIMessage:
        args = {k: (handle_in(messages) if v == "HANDLE" else v) for k, v in arguments.items()}
        return call("read_context", "c2", **args)

    model = chat(call("fetch_report", "c1", region="emea"), bad_read, AIMessage(content="done"))
    agent = create_agent(model, [fetch_report], middleware=[ToolContextMiddleware(max_output_tokens=500)])
    with session(context_dir):
        run(agent, "q", False)
    reply = [m for m in model.received[2] if isinstance(m, ToolMessage)][-1]
    assert message in reply.content


def compaction_agent(**options: Any) -> tuple[ScriptedChat, Any]:
    steps: list[Any] = [call("lookup", f"c{i}", key=f"k{i}") for i in range(6)]
    steps.insert(2, call("refused", "err", key="x"))
    steps.insert(4, call("fetch_report", "excluded", region="apac"))
    steps.append(AIMessage(content="done"))
    model = chat(*steps)
    middleware = ToolContextMiddleware(
        max_output_tokens=100_000,
        high_water=1_000,
        low_water=0,
        min_gain=0,
        cached_price=1.0,
        keep=2,
        exclude_tools=["fetch_report"],
        **options,
    )
    agent = create_agent(model, [lookup, refused, fetch_report], middleware=[middleware])
    return model, agent


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_old_results_are_compacted_restorably(context_dir: Path, use_async: bool) -> None:
    model, agent = compaction_agent()
    with session(context_dir) as s:
        final = run(agent, "collect everything", use_async)
        last = model.received[-1]
        results = [m for m in last if isinstance(m, ToolMessage)]
        names = [(m.name, is_stand_in(m.content)) for m in results]
        assert names == [
            ("lookup", True),
            ("lookup", True),
            ("refused", False),  # error results are kept
            ("lookup", True),
            ("fetch_report", False),  # excluded tool
            ("lookup", True),
            ("lookup", False),  # the two most recent
            ("lookup", False),
        ]
        for message in results:  # every result still follows the call that asked for it
            index = last.index(message)
            asker = next(m for m in reversed(last[:index]) if isinstance(m, AIMessage))
            assert message.tool_call_id in {c["id"] for c in asker.tool_calls}
        compacted = results[0]
        handle = re.search(r"ctx:[0-9a-z]+", compacted.content).group(0)  # type: ignore[union-attr]
        [original] = s.load_contexts([handle])
        assert original.result == "value of k0 " * 200
        assert count_tokens_approximately(last) < count_tokens_approximately(uncompacted(last, s))
        # written back to the agent's state: the final state holds the stand-ins, same ids
        state_results = {m.id: m for m in final["messages"] if isinstance(m, ToolMessage)}
        assert is_stand_in(state_results[compacted.id].content)


def uncompacted(messages: list[BaseMessage], s: toolctx.ContextSession) -> list[BaseMessage]:
    """The conversation with every stand-in replaced by the output it stands for."""
    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, ToolMessage) and is_stand_in(message.content):
            handle = re.search(r"ctx:[0-9a-z]+", message.content).group(0)  # type: ignore[union-attr]
            out.append(message.model_copy(update={"content": s.load_contexts([handle])[0].result}))
        else:
            out.append(message)
    return out


def test_without_write_back_the_state_keeps_the_originals(context_dir: Path) -> None:
    model, agent = compaction_agent(write_back=False)
    with session(context_dir):
        final = run(agent, "collect everything", False)
    assert any(is_stand_in(m.content) for m in model.received[-1] if isinstance(m, ToolMessage))
    assert not any(is_stand_in(m.content) for m in final["messages"] if isinstance(m, ToolMessage))


def test_a_failing_tool_is_recorded_and_the_frameworks_error_handling_still_runs(context_dir: Path) -> None:
    model = chat(call("broken", "e1", key="zz"), AIMessage(content="sorry"))
    agent = create_agent(model, [broken], middleware=[ToolContextMiddleware()])
    with session(context_dir) as s:
        with pytest.raises(ValueError, match="no such key: zz"):  # create_agent lets tool errors through
            run(agent, "q", False)
        [pointer] = s.get_all_pointers()
        [stored] = s.load_contexts([pointer])
    assert pointer.is_error
    assert stored.error is not None
    assert stored.error.type == "ValueError"


def test_handled_errors_reach_the_model_and_are_recorded(context_dir: Path) -> None:
    model = chat(call("refused", "e1", key="zz"), AIMessage(content="sorry"))
    agent = create_agent(model, [refused], middleware=[ToolContextMiddleware()])
    with session(context_dir) as s:
        run(agent, "q", False)
        [pointer] = s.get_all_pointers()
        [stored] = s.load_contexts([pointer])
    seen = next(m for m in model.received[1] if isinstance(m, ToolMessage))
    assert seen.content == "zz is not available"
    assert pointer.is_error
    assert stored.error is not None
    assert stored.error.message == "zz is not available"


def test_several_calls_in_one_step_and_non_string_results(context_dir: Path) -> None:
    @tool
    def table(n: int) -> dict[str, Any]:
        """A table."""
        return {"rows": [{"n": i, "name": f"row {i}"} for i in range(n)]}

    @tool(response_format="content_and_artifact")
    def chart(title: str) -> tuple[str, dict[str, Any]]:
        """A chart with raw data as artifact."""
        return f"chart {title}", {"points": list(range(50))}

    both = AIMessage(
        content="",
        tool_calls=[
            {"name": "table", "args": {"n": 3}, "id": "t1"},
            {"name": "chart", "args": {"title": "sales"}, "id": "t2"},
            {"name": "table", "args": {"n": 2000}, "id": "t3"},
        ],
    )
    model = chat(both, AIMessage(content="done"))
    agent = create_agent(model, [table, chart], middleware=[ToolContextMiddleware(max_output_tokens=2000)])
    with session(context_dir) as s:
        run(agent, "q", True)
        pointers = {p.call_id: p for p in s.get_all_pointers()}
        contexts = {c.call_id: c for c in s.load_contexts(list(pointers.values()))}
    assert set(pointers) == {"t1", "t2", "t3"}
    assert contexts["t2"].result == {"content": "chart sales", "artifact": {"points": list(range(50))}}
    seen = {m.tool_call_id: m for m in model.received[1] if isinstance(m, ToolMessage)}
    assert not is_stand_in(seen["t1"].content)
    assert is_stand_in(seen["t3"].content)  # the 2,000-row table was too big
    # what is shown whole is the tool's own message: nothing added to the state the graph keeps
    assert seen["t1"].response_metadata == {}
    assert seen["t2"].artifact == {"points": list(range(50))}


def test_a_tool_used_outside_any_session_lands_in_the_default_one() -> None:
    model = chat(call("fetch_report", "c1", region="emea"), AIMessage(content="done"))
    agent = create_agent(model, [fetch_report], middleware=[ToolContextMiddleware(max_output_tokens=500)])
    run(agent, "q", False)
    assert [p.tool_name for p in toolctx.current_session().get_all_pointers()] == ["fetch_report"]


def test_persist_tool_without_the_middleware(context_dir: Path) -> None:
    persisted = persist_tool(fetch_report, max_output_tokens=500)
    assert persisted.name == fetch_report.name
    assert persisted.args_schema is not None
    with session(context_dir) as s:
        shown = persisted.invoke({"region": "emea"})
        assert is_stand_in(shown)
        assert asyncio.run(persisted.ainvoke({"region": "apac"})).startswith("[toolctx stand-in]")
        assert [c.result for c in s.load_contexts(s.get_all_pointers())] == [BIG, BIG]
        with pytest.raises(ValueError, match="no such key"):
            persist_tool(broken).invoke({"key": "x"})
        assert s.get_all_pointers()[-1].is_error
    with pytest.raises(TypeError, match="persist_context"):
        persist_tool(lambda x: x)  # type: ignore[arg-type]


def test_persist_tool_gives_the_output_whole_when_making_its_stand_in_fails(
    context_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolctx.compaction import _tooltime

    def broken_stand_in(*args: Any) -> str:
        raise RuntimeError("no stand-in today")

    monkeypatch.setattr(_tooltime, "shown_output", broken_stand_in)  # (the one tool-time rule's last step)
    persisted = persist_tool(fetch_report, max_output_tokens=500)
    with session(context_dir) as s:
        with pytest.warns(toolctx.ToolctxWarning, match="could not make a stand-in"):
            shown = persisted.invoke({"region": "emea"})
        assert shown == BIG
        assert [c.result for c in s.load_contexts(s.get_all_pointers())] == [BIG]


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_persist_tool_on_a_tool_that_takes_its_call_id(context_dir: Path, use_async: bool) -> None:
    # LangChain runs such a tool only when invoked with the whole tool call: the wrapper must pass it on.
    @tool
    def export(region: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Export a region's report."""
        return f"export {tool_call_id}\n{BIG}"

    def answered(messages: list[BaseMessage]) -> AIMessage:
        return AIMessage(content=handle_in(messages))

    model = chat(call("export", "call-7", region="emea"), answered)
    agent = create_agent(model, [persist_tool(export, max_output_tokens=500)])
    with session(context_dir) as s:
        request = {"messages": [HumanMessage("export emea")]}
        result = asyncio.run(agent.ainvoke(request)) if use_async else agent.invoke(request)
        shown = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        assert [m.tool_call_id for m in shown] == ["call-7"]
        assert is_stand_in(shown[0].content)
        [context] = s.load_contexts(s.get_all_pointers())
        assert context.args == {"region": "emea"}  # the id LangChain injected is not the model's argument
        assert context.result == f"export call-7\n{BIG}"
        assert result["messages"][-1].content == handle_in(result["messages"])


def test_persist_tool_keeps_a_command_and_stands_in_for_its_message(context_dir: Path) -> None:
    @tool
    def export(region: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Export a region's report into the conversation."""
        return Command(update={"messages": [ToolMessage(content=BIG, tool_call_id=tool_call_id)]})

    model = chat(call("export", "call-8", region="emea"), lambda messages: AIMessage(content=handle_in(messages)))
    agent = create_agent(model, [persist_tool(export, max_output_tokens=500)])
    with session(context_dir) as s:
        result = agent.invoke({"messages": [HumanMessage("export emea")]})
        [shown] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        assert shown.tool_call_id == "call-8"
        assert is_stand_in(shown.content)
        [context] = s.load_contexts(s.get_all_pointers())
        assert context.result == BIG


def test_persist_tool_stores_an_error_the_tool_handles_as_an_error_and_shows_it_whole(context_dir: Path) -> None:
    def failing(key: str) -> str:
        raise ToolException("no such key: " + key * 400)

    handled = StructuredTool.from_function(failing, name="lookup", description="Look up.", handle_tool_error=True)
    model = chat(call("lookup", "call-9", key="k"), AIMessage(content="sorry"))
    agent = create_agent(model, [persist_tool(handled, max_output_tokens=50)])
    with session(context_dir) as s:
        result = agent.invoke({"messages": [HumanMessage("look k up")]})
        [shown] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        assert shown.status == "error"
        assert shown.content.startswith("no such key: kkk")
        assert not is_stand_in(shown.content)
        [pointer] = s.get_all_pointers()
        assert pointer.is_error


def test_persist_tool_decides_on_a_stand_in_by_the_content_not_the_artifact(context_dir: Path) -> None:
    @tool(response_format="content_and_artifact")
    def chart(region: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> tuple[str, str]:
        """A region's chart: a short caption, and the data behind it."""
        return f"chart of {region}", BIG

    model = chat(call("chart", "call-10", region="emea"), AIMessage(content="done"))
    agent = create_agent(model, [persist_tool(chart, max_output_tokens=50)])
    with session(context_dir) as s:
        result = agent.invoke({"messages": [HumanMessage("chart emea")]})
        [shown] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        assert shown.content == "chart of emea"
        [context] = s.load_contexts(s.get_all_pointers())
        assert context.result == {"content": "chart of emea", "artifact": BIG}


def test_bad_options() -> None:
    with pytest.raises(ConfigError, match="max_output_tokens"):
        ToolContextMiddleware(max_output_tokens=0)
    with pytest.raises(ConfigError, match="low_water"):
        ToolContextMiddleware(high_water=100, low_water=200)
    with pytest.raises(TypeError, match="not both"):
        ToolContextMiddleware(CompactionSettings(), keep=1)
    with pytest.raises(ConfigError, match="keep"):
        ToolContextMiddleware(keep=-1)
    with pytest.raises(TypeError, match="session"):
        ToolContextMiddleware(session="mine")  # type: ignore[arg-type]


def test_tool_time_stand_ins_are_shortened_when_they_grow_old(context_dir: Path) -> None:
    steps: list[Any] = [call("fetch_report", f"r{i}", region=f"r{i}") for i in range(4)]
    model = chat(*steps, AIMessage(content="done"))
    middleware = ToolContextMiddleware(
        max_output_tokens=500, high_water=1_000, low_water=0, min_gain=0, cached_price=1.0, keep=1
    )
    agent = create_agent(model, [fetch_report], middleware=[middleware])
    with session(context_dir) as s:
        run(agent, "q", False)
        last = [m for m in model.received[-1] if isinstance(m, ToolMessage)]
        assert [is_stand_in(m.content) for m in last] == [True] * 4
        assert [len(m.content) < 200 for m in last] == [True, True, True, False]  # short markers, then the tool's
        for message in last:
            handle = re.search(r"ctx:[0-9a-z]+", message.content).group(0)  # type: ignore[union-attr]
            assert s.load_contexts([handle])[0].result == BIG  # the same handle, still the whole output
        assert len(s) == 4  # compaction stored nothing twice


def test_results_from_before_the_middleware_are_stored_when_compacted(context_dir: Path) -> None:
    history = [
        HumanMessage("earlier question"),
        AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"key": "old"}, "id": "old1"}]),
        ToolMessage(content="old output " * 500, tool_call_id="old1", name="lookup"),
    ]
    model = chat(call("lookup", "n1", key="new"), AIMessage(content="done"))
    agent = create_agent(
        model,
        [lookup],
        middleware=[ToolContextMiddleware(high_water=500, low_water=0, min_gain=0, cached_price=1.0, keep=1)],
    )
    with session(context_dir) as s:
        agent.invoke({"messages": [*history, HumanMessage("new question")]})
        # (stored under the run's own scope: the invoke names no thread)
        [pointer] = [p for p in s.get_all_pointers() if p.call_id == "old1"]
        assert pointer.task_id is not None
        assert pointer.args == {"key": "old"}
        assert s.load_contexts([pointer])[0].result == "old output " * 500
    seen = next(m for m in model.received[-1] if isinstance(m, ToolMessage) and m.tool_call_id == "old1")
    assert is_stand_in(seen.content)


def test_tools_returning_a_command_get_their_message_stood_in(context_dir: Path) -> None:
    @tool
    def export(region: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Export a region and note it in the state."""
        return Command(update={"messages": [ToolMessage(BIG, tool_call_id=tool_call_id)]})

    model = chat(call("export", "x1", region="emea"), AIMessage(content="done"))
    agent = create_agent(model, [export], middleware=[ToolContextMiddleware(max_output_tokens=500)])
    with session(context_dir) as s:
        run(agent, "q", False)
        [pointer] = s.get_all_pointers()
        assert s.load_contexts([pointer])[0].result == BIG
    seen = next(m for m in model.received[1] if isinstance(m, ToolMessage))
    assert is_stand_in(seen.content)
    assert pointer.handle in seen.content


def test_a_json_schema_tool_keeps_every_argument_the_model_gave() -> None:
    from toolctx_langchain._messages import model_arguments

    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    lookup = StructuredTool(name="lookup", description="Look up.", args_schema=schema, func=lambda **kw: "ok")
    assert model_arguments(lookup, {"q": "x", "root": 1}) == {"q": "x", "root": 1}


@tool
def order_lookup(n: int) -> str:
    """Look an order up."""
    return f"order {n}"


def test_a_call_with_an_integer_past_64_bits_is_measured_and_compaction_goes_on(context_dir: Path) -> None:
    from toolctx_langchain.middleware import MessageAdapter

    asked = AIMessage(content="", tool_calls=[{"name": "order_lookup", "args": {"n": 2**70}, "id": "n1"}])
    described = MessageAdapter().describe(asked)
    assert described.tokens > 0
    assert described.calls[0].args == {"n": 2**70}
    # in a run, the calls after it are still compacted
    steps: list[Any] = [asked, *(call("lookup", f"c{i}", key=f"k{i}") for i in range(6))]
    model = chat(*steps, AIMessage(content="done"))
    middleware = ToolContextMiddleware(high_water=500, low_water=0, min_gain=0, cached_price=1.0, keep=1)
    agent = create_agent(model, [lookup, order_lookup], middleware=[middleware])
    with session(context_dir):
        agent.invoke({"messages": [HumanMessage("go")]})
    last = [m for m in model.received[-1] if isinstance(m, ToolMessage)]
    assert any(is_stand_in(m.content) for m in last)


@tool(response_format="content_and_artifact")
def chart(region: str) -> tuple[str, dict[str, Any]]:
    """A revenue chart: its text for the model, its data as an artifact."""
    return BIG, {"points": [1, 2, 3], "region": region}


def test_persist_tool_keeps_the_artifact_of_a_tool_of_content_and_artifact(context_dir: Path) -> None:
    model = chat(call("chart", "a1", region="emea"), AIMessage(content="done"))
    agent = create_agent(model, [persist_tool(chart, max_output_tokens=500)])
    with session(context_dir) as s:
        result = agent.invoke({"messages": [HumanMessage("chart it")]})
        [stored] = s.load_contexts(s.get_all_pointers())
    [message] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert message.tool_call_id == "a1"
    assert message.artifact == {"points": [1, 2, 3], "region": "emea"}  # the framework's state keeps it
    assert is_stand_in(message.content)  # the model reads a stand-in for the big text
    assert stored.result == {"content": BIG, "artifact": {"points": [1, 2, 3], "region": "emea"}}
    with session(context_dir):
        plain = persist_tool(chart).invoke({"region": "x"})  # without a tool call: the content only, as LangChain does
    assert isinstance(plain, str)
    assert is_stand_in(plain)


def test_a_call_shown_whole_is_stored_later_with_its_arguments_as_they_were(context_dir: Path) -> None:
    from types import SimpleNamespace

    middleware = ToolContextMiddleware()

    def finished(call_id: str, args: dict[str, Any], content: str = "3 matches") -> Any:
        request = SimpleNamespace(
            tool_call={"name": "grep", "args": args, "id": call_id}, tool=None, runtime=SimpleNamespace(config={})
        )
        return middleware._finished(request, ToolMessage(content, tool_call_id=call_id, name="grep"))  # type: ignore[arg-type]

    with session(context_dir) as s:
        scalars: dict[str, Any] = {"pattern": "todo", "limit": 3}
        finished("scalars", scalars)
        assert len(s._saver._later) == 1  # queued: stored in one go with the next ones
        # longer than max_output_tokens characters, or not ASCII, but estimated within it: queued too
        finished("long", {"pattern": "def"}, "src/app.py:12: def run(self):\n" * 70)
        finished("accented", {"pattern": "café"}, "menu.txt:3: café au lait\n" * 80)
        assert len(s._saver._later) == 3
        paths = ["a.py"]
        finished("a-list", {"paths": paths, "options": {"depth": 1}})  # nested arguments: queued as well
        assert len(s._saver._later) == 4
        paths.append("b.py")  # the graph's state changing what the call was given: the stored copy stays
        scalars["pattern"], scalars["extra"] = "changed", True
        stored = {c.call_id: c for c in s.load_contexts(s.get_all_pointers())}
        assert [p.call_id for p in s.get_all_pointers()] == ["scalars", "long", "accented", "a-list"]
        assert stored["a-list"].args == {"paths": ["a.py"], "options": {"depth": 1}}
        assert stored["scalars"].result == "3 matches"
        assert stored["scalars"].args == {"pattern": "todo", "limit": 3}
