"""One worker of ``bench/fleet.py``: serves any turn of any recorded session it is handed.

A worker is a process that stays up (a server's worker): it keeps one
``Conversations`` on the shared store and index (``TOOLCTX_STORE``,
``TOOLCTX_INDEX``) and one LangChain middleware for every run it serves. A turn is
the replay's own turn (``_replay_langchain`` / ``_replay_agents``): the scripted
model answers with the recorded steps from the turn's place in the session on, and
records what it was given. LangChain's history goes back and forth with the
client (no checkpointer: the client holds the thread); the Agents SDK's lives in a
SQLite session file every worker opens.
"""

from __future__ import annotations

import asyncio
import os
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _replay_measure import READ_ALL, ModelInput, read_back_text
from _replay_trace import Trace, load_traces

import toolctx
from toolctx.errors import ToolctxWarning

_traces: dict[str, Trace] = {}
_conversations: toolctx.Conversations | None = None
_middleware: Any = None
_filter: Any = None


def start(traces_path: str, local_dir: str) -> int:
    """Load the sessions and open the worker's conversations; its pid."""
    global _conversations
    _traces.update((trace.id, trace) for trace in load_traces(Path(traces_path)))
    _conversations = toolctx.Conversations(local_dir, lease_wait=300)
    warnings.simplefilter("always", ToolctxWarning)
    return os.getpid()


def conversations() -> toolctx.Conversations:
    assert _conversations is not None, "start() the worker first"
    return _conversations


def langchain_turn(trace_id: str, conversation: str, index: int, history: list[Any]) -> dict[str, Any]:
    """Turn ``index`` of a recorded session through ``create_agent``, ``history`` sent by the client."""
    global _middleware
    from _replay_langchain import ScriptedChatModel, _Replay
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from toolctx_langchain import ToolContextMiddleware

    trace = _traces[trace_id]
    if _middleware is None:
        _middleware = ToolContextMiddleware(session=conversations())
    replay = _Replay(trace)
    offset = sum(len(turn.steps) + 1 for turn in trace.turns[:index])
    replay.inputs = [ModelInput(())] * offset  # (the scripted model answers from this turn's place on)
    for turn in trace.turns[:index]:  # (repeated calls get their outputs in order: the earlier turns took theirs)
        for step in turn.steps:
            for call in step.calls:
                replay.book.by_args(call.name, call.args)
    agent = create_agent(
        ScriptedChatModel(replay=replay),
        replay.tools(),
        system_prompt=trace.system or None,
        middleware=[_middleware],
    )
    turn = trace.turns[index]
    config: Any = {"configurable": {"thread_id": conversation}, "recursion_limit": 2 * len(turn.steps) + 10}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ToolctxWarning)
        state = agent.invoke({"messages": [*history, HumanMessage(turn.user)]}, config)
    return {
        "pid": os.getpid(),
        "inputs": replay.inputs[offset:],
        "history": state["messages"],
        "warnings": [str(w.message) for w in caught if issubclass(w.category, ToolctxWarning)],
    }


def agents_turn(trace_id: str, conversation: str, index: int, history_db: str) -> dict[str, Any]:
    """Turn ``index`` of a recorded session through ``Runner.run``, on a SQLite session every worker opens."""
    from _replay_agents import _Replay
    from _replay_measure import HookClock
    from agents import Agent, RunConfig, Runner, SQLiteSession

    global _filter
    from toolctx_openai_agents import compact_tool_outputs

    trace = _traces[trace_id]
    replay = _Replay(trace, HookClock(), True)
    agent = Agent(name="replay", instructions=trace.system or None, model=replay.model, tools=replay.tools())
    if _filter is None:  # (one for everything the worker serves, as a server builds its RunConfig once)
        _filter = compact_tool_outputs()
    config = RunConfig(tracing_disabled=True, call_model_input_filter=_filter)
    replay.model.script.extend(replay.script(index))
    turn = trace.turns[index]
    history = SQLiteSession(conversation, history_db)
    try:
        with warnings.catch_warnings(record=True) as caught, conversations().open(history):
            warnings.simplefilter("always", ToolctxWarning)
            asyncio.run(Runner.run(agent, turn.user, session=history, run_config=config, max_turns=len(turn.steps) + 2))
    finally:
        history.close()
    if replay.model.script:
        raise RuntimeError(f"{trace_id} turn {index}: {len(replay.model.script)} recorded answers not asked for")
    return {
        "pid": os.getpid(),
        "inputs": replay.inputs,
        "warnings": [str(w.message) for w in caught if issubclass(w.category, ToolctxWarning)],
    }


def read_all(conversation: str, wanted: list[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
    """Read back every (handle, part) in ``conversation``'s scope, as its ``read_context`` would here."""
    from toolctx.compaction import read_context

    session = conversations().get(conversation)
    found: dict[tuple[str, str], str | None] = {}
    for handle, part in wanted:
        answer = read_context(session, handle, 0, READ_ALL, part=part, scope=conversation)
        found[handle, part] = read_back_text(answer)
    return found
