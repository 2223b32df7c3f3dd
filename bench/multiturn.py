"""Handles across turns and restarts: every handle a model was shown reads back in every later turn.

Replays the multi-turn sessions of a trace file through LangChain's ``create_agent``
with ``ToolContextMiddleware(session=Conversations(...))``, and through the Agents
SDK's ``Runner.run`` with ``persist_tools`` + ``read_context`` +
``compact_tool_outputs()`` inside ``Conversations(...).open(sdk_session)``. Each turn
is run as a new process would run it: a new ``Conversations``, adapters and agent,
with only the conversation's own state (a LangGraph checkpointer; an SDK
``SQLiteSession`` in a file) and the context directory carried over, and the turn's
sessions closed at its end. After every turn, every handle shown to the
model so far (results and arguments) is read back through ``read_context`` by a fresh
``Conversations`` and compared with the recorded output; and read from another
conversation, where it must be refused. It also counts the model calls sent
``read_context``'s definition, those of them whose messages hold no stand-in (nothing
to read back), and the definition's share of all tokens sent (exact ``o200k_base``
counts). ``tests/integrations/test_conversations.py`` runs turns in real
subprocesses; this replays the recorded sessions at scale.

    python bench/multiturn.py --traces ../shared/traces/dev.jsonl [--framework F] [--stress]

``--stress`` uses settings that make stand-ins of almost every output (a tool-time
limit of 100 tokens, batches over 1,000 tokens, no cache pricing), so that far more
handles are tested than the defaults produce on these short customer-service sessions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _replay_agents import _Replay as _AgentsReplay
from _replay_langchain import ScriptedChatModel, _Replay
from _replay_measure import (
    TOOLCTX_DEFINITIONS,
    HookClock,
    ModelInput,
    TokenCounter,
    _tool_texts,
    argument_stand_ins,
    memoized,
    o200k_counter,
    read_back_text,
    text_stand_ins,
)
from _replay_trace import Trace, load_traces, recorded_texts
from agents import Agent, RunConfig, Runner, SQLiteSession
from agents.tool_context import ToolContext
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from toolctx_langchain import ToolContextMiddleware
from toolctx_openai_agents import read_context

from toolctx import Conversations
from toolctx.compaction import STAND_IN_MARK, handle_of, is_stand_in
from toolctx.redaction import resolve_redactor

STRESS: dict[str, Any] = {
    "max_output_tokens": 100,
    "high_water": 1000,
    "keep": 1,
    "min_gain": 0,
    "cached_price": 1.0,
    "text_chars": 40,
}
READ_ALL = 10**9


FRAMEWORKS = ("langchain", "agents")


def read(directory: Path, thread: str, handle: str, part: str = "result") -> str | None:
    """What a later turn's LangChain ``read_context`` returns for ``handle`` in ``thread`` (a fresh process's view)."""
    conversations = Conversations(directory)
    try:
        tool = ToolContextMiddleware(session=conversations).tools[0]
        config: Any = {"configurable": {"thread_id": thread}}
        answer = tool.invoke({"id": handle, "offset": 0, "limit": READ_ALL, "part": part}, config)
        return read_back_text(str(answer))
    finally:
        conversations.close()


def read_agents(directory: Path, conversation: str, handle: str, part: str = "result") -> str | None:
    """What a later turn's Agents SDK ``read_context`` returns for ``handle`` in ``conversation`` (a fresh process)."""
    conversations = Conversations(directory)
    arguments = json.dumps({"id": handle, "offset": 0, "limit": READ_ALL, "part": part})
    context = ToolContext(None, tool_name="read_context", tool_call_id="read-back", tool_arguments=arguments)
    try:
        with conversations.open(conversation):
            answer: Any = asyncio.run(_awaited(read_context.on_invoke_tool(context, arguments)))
        return read_back_text(str(answer))
    finally:
        conversations.close()


async def _awaited(pending: Awaitable[Any]) -> Any:
    return await pending


class _LangChainTurns:
    """One conversation's turns through ``create_agent``, each as a new process would run it."""

    def __init__(self, trace: Trace, directory: Path, options: dict[str, Any]) -> None:
        self.trace, self.directory, self.options = trace, directory, options
        self.replay = _Replay(trace)
        self.saver = InMemorySaver()  # the conversation's own state, carried over
        self.inputs: list[ModelInput] = self.replay.inputs

    def run(self, index: int) -> None:
        turn = self.trace.turns[index]
        conversations = Conversations(self.directory)
        middleware = ToolContextMiddleware(session=conversations, **self.options)
        agent = create_agent(
            ScriptedChatModel(replay=self.replay),
            self.replay.tools(),
            system_prompt=self.trace.system or None,
            middleware=[middleware],
            checkpointer=self.saver,
        )
        config: Any = {"configurable": {"thread_id": self.trace.id}, "recursion_limit": 2 * len(turn.steps) + 10}
        try:
            agent.invoke({"messages": [HumanMessage(turn.user)]}, config)
        finally:
            conversations.close()

    def read(self, conversation: str, handle: str, part: str) -> str | None:
        return read(self.directory, conversation, handle, part)


class _AgentsTurns:
    """One conversation's turns through ``Runner.run``, each as a new process would run it."""

    def __init__(self, trace: Trace, directory: Path, options: dict[str, Any]) -> None:
        self.trace, self.directory = trace, directory
        self.replay = _AgentsReplay(trace, HookClock(), with_toolctx=True)
        self.replay.options = options
        self.history = directory.parent / "sdk-session.sqlite"  # the SDK session's file, carried over
        self.inputs: list[ModelInput] = self.replay.inputs

    def run(self, index: int) -> None:
        asyncio.run(self._run(index))

    async def _run(self, index: int) -> None:
        turn, replay = self.trace.turns[index], self.replay
        conversations = Conversations(self.directory)
        sdk_session = SQLiteSession(self.trace.id, str(self.history))
        agent = Agent(name="replay", instructions=self.trace.system or None, model=replay.model, tools=replay.tools())
        config = RunConfig(tracing_disabled=True, call_model_input_filter=replay.input_filter())
        try:
            with conversations.open(sdk_session):
                replay.model.script.extend(replay.script(index))
                await Runner.run(
                    agent, turn.user, session=sdk_session, run_config=config, max_turns=len(turn.steps) + 2
                )
            if replay.model.script:  # (the turn ended early: its answers left would run in the next one)
                raise RuntimeError(f"{self.trace.id}: {len(replay.model.script)} recorded answers were not asked for")
        finally:
            sdk_session.close()
            conversations.close()

    def read(self, conversation: str, handle: str, part: str) -> str | None:
        return read_agents(self.directory, conversation, handle, part)


def verdict(back: str | None, original: str | None, texts: set[str], redact: Callable[[str], str] | None) -> str:
    """ "exact", "redacted" or "failed": a read-back against its original (None: any recorded assistant text)."""
    expected = {original} if original is not None else texts
    if back is not None and back in expected:
        return "exact"
    if back is not None and redact is not None and back in {redact(t) for t in expected}:
        return "redacted"
    return "failed"


def replay(
    trace: Trace, directory: Path, options: dict[str, Any], count: TokenCounter, framework: str = "langchain"
) -> dict[str, int]:
    figures = {"turns": len(trace.turns), "handles": 0, "checks": 0, "exact": 0, "redacted": 0, "failed": 0}
    figures["refused_elsewhere"] = 0
    turns = (
        _LangChainTurns(trace, directory, options)
        if framework == "langchain"
        else _AgentsTurns(trace, directory, options)
    )
    redact = resolve_redactor(True)
    recorded = {call.id: call.output for call in trace.calls}
    arguments = {call.id: call.args for call in trace.calls}
    shown: dict[tuple[str, str], str | None] = {}  # (handle, part) -> what it must read back as
    texts = recorded_texts(trace)  # an assistant text stand-in must read back as one of them
    for index in range(len(trace.turns)):
        turns.run(index)  # a new process for each turn
        for model_input in turns.inputs:
            for call_id, text in _tool_texts(model_input.units):
                pointer_id = handle_of(text) if is_stand_in(text) else None
                if pointer_id is not None and call_id in recorded:
                    shown[(f"ctx:{pointer_id}", "result")] = recorded[call_id]
            for call_id, name, text in argument_stand_ins(model_input.units):
                pointer_id = handle_of(text)
                value = arguments.get(call_id, {}).get(name)
                if pointer_id is not None and isinstance(value, str):
                    shown[(f"ctx:{pointer_id}", f"args.{name}")] = value
            for text in text_stand_ins(model_input.units):
                pointer_id = handle_of(text)
                if pointer_id is not None:
                    shown[(f"ctx:{pointer_id}", "result")] = None
        for (handle, part), original in shown.items():  # every handle shown so far, read in the next turn
            figures["checks"] += 1
            back = turns.read(trace.id, handle, part)
            figures[verdict(back, original, texts, redact.redact_text if redact is not None else None)] += 1
    figures["handles"] = len(shown)
    figures["text_handles"] = sum(original is None for original in shown.values())
    for handle, part in list(shown)[:5]:  # another conversation must not read them
        if turns.read(trace.id + "-other", handle, part) is None:
            figures["refused_elsewhere"] += 1
    figures["refusal_checks"] = min(5, len(shown))
    # What read_context's definition cost: the model calls it was sent to, and those with nothing to read back
    for model_input in turns.inputs:
        figures["model_calls"] = figures.get("model_calls", 0) + 1
        parts = [(kind, text) for unit in model_input.units for kind, text in unit.parts]
        figures["tokens"] = figures.get("tokens", 0) + sum(count(text) for _, text in parts)
        definition = sum(count(text) for kind, text in parts if kind == TOOLCTX_DEFINITIONS)
        if definition:
            figures["offered"] = figures.get("offered", 0) + 1
            figures["definition_tokens"] = figures.get("definition_tokens", 0) + definition
            messages = (text for unit in model_input.units if unit.role != "tools" for _, text in unit.parts)
            if not any(STAND_IN_MARK in text for text in messages):
                figures["offered_needlessly"] = figures.get("offered_needlessly", 0) + 1
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=None, help="at most N sessions")
    parser.add_argument("--stress", action="store_true", help="stand-ins for almost every output")
    parser.add_argument("--framework", choices=[*FRAMEWORKS, "both"], default="both")
    args = parser.parse_args(argv)
    for framework in FRAMEWORKS if args.framework == "both" else (args.framework,):
        report(args.traces, args.limit, args.stress, framework)


def report(path: Path, limit: int | None, stress: bool, framework: str) -> None:
    """Replay the multi-turn sessions of ``path`` through ``framework`` and print the table."""
    traces = [t for t in load_traces(path) if len(t.turns) > 1][:limit]
    options = STRESS if stress else {}
    totals: dict[str, int] = {}
    count = memoized(o200k_counter())
    started = time.perf_counter()
    for trace in traces:
        with tempfile.TemporaryDirectory() as tmp:
            for key, value in replay(trace, Path(tmp) / "context", options, count, framework).items():
                totals[key] = totals.get(key, 0) + value
    mode = "stress settings " + ", ".join(f"{k}={v}" for k, v in STRESS.items()) if stress else "default settings"
    name = "LangChain create_agent" if framework == "langchain" else "Agents SDK Runner.run"
    print(f"### Multi-turn sessions through {name}, every turn as a new process ({mode})\n")
    seconds = time.perf_counter() - started
    print(f"{len(traces)} multi-turn sessions, {totals.get('turns', 0)} turns, {seconds:.0f} s.\n")
    print("| figure | value |\n|---|---:|")
    print(f"| distinct handles shown (results, arguments and assistant text) | {totals.get('handles', 0):,} |")
    print(f"| ...of which assistant text | {totals.get('text_handles', 0):,} |")
    print(f"| read-backs in later turns (each handle after every turn) | {totals.get('checks', 0):,} |")
    print(
        f"| ...exact / as redacted / failed | {totals.get('exact', 0):,} / {totals.get('redacted', 0):,} / "
        f"{totals.get('failed', 0):,} |"
    )
    print(
        f"| read from another conversation: refused | {totals.get('refused_elsewhere', 0):,} of "
        f"{totals.get('refusal_checks', 0):,} |"
    )
    calls, tokens = totals.get("model_calls", 0), totals.get("tokens", 0)
    print(
        f"| model calls sent read_context / of them with no stand-in in their messages | "
        f"{totals.get('offered', 0):,} of {calls:,} / {totals.get('offered_needlessly', 0):,} |"
    )
    share = totals.get("definition_tokens", 0) / tokens if tokens else 0.0
    print(f"| read_context's definition, share of all tokens sent (o200k_base) | {share:.1%} |")
    print()


if __name__ == "__main__":
    main()
