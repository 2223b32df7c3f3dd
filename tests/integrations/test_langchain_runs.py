"""ToolContextMiddleware around a whole LangChain run: the graph it adds to, and the scope of a run without a thread."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelRequest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from toolctx_langchain import ToolContextMiddleware

from tests.integrations.test_langchain import BIG, call, chat
from toolctx import Conversations, session
from toolctx.compaction import is_stand_in

RUN_NODES = {"ToolContextMiddleware.before_agent", "ToolContextMiddleware.after_agent"}


@tool
def report(region: str) -> str:
    """A region's quarterly report."""
    return f"report for {region}\n" + BIG


def test_the_plain_middleware_adds_no_node_around_the_run(context_dir: Path) -> None:
    # (LangGraph runs each node of the graph at a cost of its own, twice a turn for the hooks around a run)
    middleware = ToolContextMiddleware(session=lambda _: session(context_dir))
    agent = create_agent(chat(AIMessage(content="done")), [report], middleware=[middleware])
    assert not RUN_NODES & set(agent.get_graph().nodes)


def test_a_conversations_index_gets_the_lease_hooks_around_each_run(context_dir: Path) -> None:
    # (the leases themselves, across worker processes on shared stores: tests/integrations/test_fleet.py)
    conversations = Conversations(context_dir)
    middleware = ToolContextMiddleware(session=conversations)
    assert isinstance(middleware, ToolContextMiddleware)
    assert middleware.name == "ToolContextMiddleware"
    model = chat(call("report", "c1", region="north"), AIMessage(content="done"))
    agent = create_agent(model, [report], middleware=[middleware], checkpointer=InMemorySaver())
    assert set(agent.get_graph().nodes) >= RUN_NODES
    try:
        agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t1"}})
    finally:
        conversations.close()
    assert len(model.received) == 2


def test_a_subclass_over_an_index_keeps_its_own_run_hooks_and_gets_the_leases(context_dir: Path) -> None:
    started: list[str] = []

    class Greeting(ToolContextMiddleware):
        def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            started.append("greeted")
            return None

    conversations = Conversations(context_dir)
    middleware = Greeting(session=conversations)
    assert isinstance(middleware, Greeting)
    assert middleware.name == "Greeting"
    held: list[str] = []
    hold, release = conversations.hold, conversations.release
    conversations.hold = lambda thread: held.append(f"hold {thread}") or hold(thread)  # type: ignore[method-assign]
    conversations.release = lambda thread: held.append(f"release {thread}") or release(thread)  # type: ignore[method-assign]
    model = chat(call("report", "c1", region="north"), AIMessage(content="done"))
    agent = create_agent(model, [report], middleware=[middleware], checkpointer=InMemorySaver())
    assert {"Greeting.before_agent", "Greeting.after_agent"} <= set(agent.get_graph().nodes)
    try:
        agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t2"}})
    finally:
        conversations.close()
    assert started == ["greeted"]
    assert held == ["hold t2", "release t2"]
    # Without an index, the subclass's own hook is its only one.
    plain = create_agent(chat(AIMessage(content="done")), [report], middleware=[Greeting()])
    assert "Greeting.after_agent" not in set(plain.get_graph().nodes)


@pytest.mark.parametrize(("write_back", "asynchronous"), [(True, False), (False, False), (True, True)])
def test_a_run_without_a_thread_keeps_one_scope_from_its_first_model_call(
    context_dir: Path, write_back: bool, asynchronous: bool
) -> None:
    runs = []
    with session(context_dir) as s:
        for region in ("north", "south"):
            model = chat(
                call("report", "c1", region=region),
                call("report", "c2", region=region + "-east"),
                AIMessage(content="done"),
            )
            middleware = ToolContextMiddleware(max_output_tokens=100, write_back=write_back)
            agent = create_agent(model, [report], middleware=[middleware])
            request = {"messages": [HumanMessage("go")]}
            asyncio.run(agent.ainvoke(request)) if asynchronous else agent.invoke(request)
            stood_in = [m for m in model.received[-1] if isinstance(m, ToolMessage)]
            assert all(is_stand_in(m.content) for m in stood_in)
            runs.append({p.task_id for p in s.get_all_pointers() if p.call_id in ("c1", "c2")} - set().union(*runs))
    # Both calls of a run under one scope, made for it; the other run's under another.
    assert [len(scopes) for scopes in runs] == [1, 1]
    assert None not in runs[0] | runs[1]
    assert runs[0] != runs[1]


class _Noting(AgentMiddleware):
    """A middleware inside toolctx's that updates the state from its model hook too."""

    def wrap_model_call(self, request: ModelRequest, handler: Any) -> Any:
        return ExtendedModelResponse(model_response=handler(request), command=Command(update={"messages": []}))


def test_an_inner_middlewares_state_update_and_toolctxs_both_go_in(context_dir: Path) -> None:
    model = chat(
        call("report", "c1", region="north"),
        call("report", "c2", region="south"),
        call("report", "c3", region="west"),
        AIMessage(content="done"),
    )
    middleware = ToolContextMiddleware(high_water=500, low_water=0, min_gain=0, cached_price=1.0, keep=1)
    agent = create_agent(model, [report], middleware=[middleware, _Noting()], checkpointer=InMemorySaver())
    with session(context_dir):
        state = agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t"}})
    # The compacted forms were written back into the state, past the inner middleware's own update.
    kept = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "c1"]
    assert kept
    assert is_stand_in(kept[0].content)
