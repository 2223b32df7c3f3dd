"""A fleet: worker processes serving the turns of two conversations, each turn routed at random.

The workers are real processes that stay up between turns (each keeps the
conversations it served open, as a server process does) and reach a real S3
endpoint over HTTP on loopback for the payloads and a real PostgreSQL server for
the session index. Every turn is served with toolctx (its big output stood in), no
worker is ever told a conversation is busy, every handle shown in turn 1 reads back
on whichever worker serves a later turn, and neither conversation's model ever
sees the other's outputs.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import new_postgres_database

from . import fleet_worker

CONVERSATIONS = ("alpha", "beta")
TURNS = 4


@pytest.fixture
def workers(
    s3_server: Any, s3_env: dict[str, str], postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[ProcessPoolExecutor]]:
    """Three workers reaching the S3 endpoint for payloads and a PostgreSQL session index (TOOLCTX_INDEX)."""
    monkeypatch.setenv("TOOLCTX_FLEET_STORE", f"s3://{s3_server.bucket()}/conversations")
    monkeypatch.setenv("TOOLCTX_INDEX", new_postgres_database(postgres_url))
    monkeypatch.setenv("TOOLCTX_FLEET_LOCAL", str(tmp_path / "local"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))
    context = multiprocessing.get_context("spawn")  # (each a fresh interpreter, as a server's workers are)
    pool = [ProcessPoolExecutor(max_workers=1, mp_context=context) for _ in range(3)]
    try:
        yield pool
    finally:
        for worker in pool:
            worker.shutdown(cancel_futures=True)


def serve(
    pool: list[ProcessPoolExecutor], turn: Callable[..., dict[str, Any]], state: dict[str, Any]
) -> list[dict[str, Any]]:
    routing = random.Random(7)  # (the same routing every run)
    served = []
    for number in range(1, TURNS + 1):
        for conversation in CONVERSATIONS:
            worker = routing.choice(pool)
            outcome = worker.submit(turn, conversation, number, state[conversation]).result(timeout=300)
            if "history" in outcome:
                state[conversation] = outcome["history"]
            served.append({**outcome, "conversation": conversation, "turn": number})
    return served


def check(served: list[dict[str, Any]]) -> None:
    assert len({s["pid"] for s in served}) > 1  # (the turns of a conversation went to several workers)
    for s in served:
        assert s["stood_in"], f"turn {s['turn']} of {s['conversation']} ran without toolctx"
        if s["turn"] > 1:
            answer = s["read_back"]
            assert answer is not None
            assert answer.split("\n", 1)[1] == fleet_worker.big(s["conversation"], 1)
        other = next(c for c in CONVERSATIONS if c != s["conversation"])
        assert not any(f"{other} turn" in shown for shown in s["inputs"])


def test_langchain_turns_on_random_workers(workers: list[ProcessPoolExecutor]) -> None:
    check(serve(workers, fleet_worker.langchain_turn, dict.fromkeys(CONVERSATIONS, "")))


def test_agents_sdk_turns_on_random_workers(workers: list[ProcessPoolExecutor], tmp_path: Path) -> None:
    history = str(tmp_path / "history.db")
    served = serve(workers, fleet_worker.sdk_turn, dict.fromkeys(CONVERSATIONS, history))
    check(served)
    assert json.dumps(served).count("SessionBusyError") == 0


def test_a_store_gone_mid_conversation_shows_outputs_whole_never_an_unreadable_handle(
    s3_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The S3 server is stopped between two turns: the second turn's big output reaches the model whole (a
    # stand-in is shown only for an output whose stored copy is there), the run goes on, and it is said.
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from toolctx_langchain import ToolContextMiddleware

    import toolctx
    from tests.s3_server import S3Server

    from .test_langchain import BIG, call, chat, fetch_report

    server = S3Server().start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
    conversations = toolctx.Conversations(tmp_path / "local", store=f"s3://{server.bucket()}/c")
    try:

        def turn(call_id: str) -> str:
            model = chat(call("fetch_report", call_id, region="emea"), AIMessage("done"))
            agent = create_agent(model, [fetch_report], middleware=[ToolContextMiddleware(session=conversations)])
            state = agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t-1"}})
            return str(next(m for m in state["messages"] if isinstance(m, ToolMessage)).content)

        assert turn("c1").startswith("[toolctx stand-in]")
        server.stop()
        assert turn("c2") == BIG
        said = toolctx.testing.escalated_warnings()  # (held back from the tool call, then given to the test)
        assert any("could not" in str(w) for w in said), said
    finally:
        conversations.close()
        server.stop()


def test_the_index_gone_mid_conversation_shows_outputs_whole_and_the_conversation_goes_on(
    s3_server: Any, s3_env: dict[str, str], tmp_path: Path
) -> None:
    # PostgreSQL (the session index) is stopped between turns, then started again. During the outage a worker
    # that has the conversation open and one that must open it both run their turns, with the big output shown
    # whole (no handle another worker could not find); after it, a new worker reads back what was stood in.
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from toolctx_langchain import ToolContextMiddleware

    import toolctx
    from tests.postgres_server import PostgresServer

    from .test_langchain import BIG, call, chat, fetch_report

    store = f"s3://{s3_server.bucket()}/c"
    with PostgresServer() as index:

        def turn(conversations: toolctx.Conversations, thread: str, call_id: str, read: str | None = None) -> str:
            steps = [call("fetch_report", call_id, region="emea")]
            if read is not None:
                steps.append(call("read_context", f"{call_id}-r", id=read, limit=10**6))
            model = chat(*steps, AIMessage("done"))
            agent = create_agent(model, [fetch_report], middleware=[ToolContextMiddleware(session=conversations)])
            state = agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": thread}})
            tools = [str(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]
            return "\n--\n".join(tools)

        first = toolctx.Conversations(tmp_path / "w1", store=store, index=index.url)
        try:
            shown = turn(first, "t-1", "c1")
            assert shown.startswith("[toolctx stand-in]")
            handle = fleet_worker.HANDLE.search(shown).group(0)  # type: ignore[union-attr]
            index.pause()
            assert turn(first, "t-1", "c2") == BIG  # (the conversation open here: stored in S3, not listed)
            second = toolctx.Conversations(tmp_path / "w2", store=store, index=index.url)
            assert turn(second, "t-2", "c3") == BIG  # (a conversation that could not be opened at all)
            said = toolctx.testing.escalated_warnings()
            assert any("could not" in str(w) for w in said), said
            index.restart()
            third = toolctx.Conversations(tmp_path / "w3", store=store, index=index.url)
            shown = turn(third, "t-1", "c4", read=handle)
            assert shown.split("\n--\n")[0].startswith("[toolctx stand-in]")
            assert shown.split("\n--\n")[1].split("\n", 1)[1] == BIG  # turn 1's handle, read on a new worker
            for conversations in (second, third):
                conversations.close()
        finally:
            first.close()


def test_workers_killed_mid_turn_lose_nothing_acknowledged_and_hold_the_conversation_one_lease_at_most(
    postgres_url: str,
) -> None:
    # bench/fleet_faults.py does this 50 times; here 3 workers are killed, each holding the conversation's
    # lease while storing outputs, and the next one (a new process) reads back every acknowledged output.
    import bench.fleet_faults as faults

    report = faults.drill(3, 1.0, random.Random(3))
    assert report["failed"] == []
    assert report["acknowledged"] > 0
    assert report["read_back_exactly"] == report["readings"] > report["acknowledged"]
