"""Tokens a model receives in a long tool-heavy run, with and without toolctx's adapters.

    python bench/adapters.py

A scripted model makes 60 tool calls, one per turn, whose outputs range from 1 KB
to 200 KB (log-uniform, fixed seed), then answers. The same run goes through each
framework twice: as is, and with toolctx (LangChain: ``ToolContextMiddleware()``;
Agents SDK: ``persist_tools`` plus ``compact_tool_outputs()``), all defaults. For
every model call the input is counted (LangChain: ``count_tokens_approximately``;
Agents SDK: bytes of the input items / 4). After the run, every output is read
back through ``read_context`` and compared with the original.

Then the adapters' own cost per tool call, beyond what the core's
``save_context`` costs for the same call: median of 7 repeats.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import orjson
from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import tool
from toolctx_langchain import ToolContextMiddleware
from toolctx_openai_agents import compact_tool_outputs, persist_tools

import toolctx
from toolctx.compaction import read_context
from toolctx.tokens import estimate_tokens

CALLS = 60


def estimate_input_tokens(items: Any) -> int:
    """About how many tokens the input items are (one per 4 bytes of their JSON)."""
    return estimate_tokens(orjson.dumps(list(items), default=str))


def outputs(seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    words = ["revenue", "region", "quarter", "growth", "margin", "customer", "churn", "forecast", "pipeline", "deal"]
    texts = []
    for i in range(CALLS):
        size = int(1024 * 200 ** rng.random())  # 1 KB .. 200 KB, log-uniform
        line = f"record {i}: " + " ".join(rng.choices(words, k=12)) + "\n"
        texts.append((line * (size // len(line) + 1))[:size])
    return texts


OUTPUTS = outputs()


def read_everything(session: toolctx.ContextSession) -> bool:
    """Every stored output, read back through read_context, equals the original."""
    for pointer in session.get_all_pointers():
        index = int(pointer.args["i"])
        text = read_context(session, pointer.handle, 0, 10**7)
        if text.split("\n", 1)[1] != OUTPUTS[index]:
            return False
    return len(session) == CALLS


# -- LangChain -------------------------------------------------------------------------------


class Scripted(FakeMessagesListChatModel):
    seen: list[int]

    def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.seen.append(count_tokens_approximately(messages))
        step = len(self.seen) - 1
        if step < CALLS:
            reply = AIMessage(content="", tool_calls=[{"name": "fetch", "args": {"i": step}, "id": f"c{step}"}])
        else:
            reply = AIMessage(content="done")
        self.responses = [reply]
        self.i = 0
        return super()._generate(messages, stop, run_manager, **kwargs)


@tool
def fetch(i: int) -> str:
    """Fetch record set i."""
    return OUTPUTS[i]


def langchain_run(with_toolctx: bool) -> tuple[list[int], bool]:
    model = Scripted(responses=[AIMessage(content="")], seen=[])
    middleware = [ToolContextMiddleware()] if with_toolctx else []
    agent = create_agent(model, [fetch], middleware=middleware)
    with tempfile.TemporaryDirectory() as tmp, toolctx.session(tmp, memory_budget=1 << 30) as s:
        agent.invoke({"messages": [HumanMessage("Collect every record set.")]}, {"recursion_limit": 500})
        readable = read_everything(s) if with_toolctx else True
    return model.seen, readable


# -- Agents SDK -------------------------------------------------------------------------------


@function_tool
def fetch_records(i: int) -> str:
    """Fetch record set i."""
    return OUTPUTS[i]


def agents_run(with_toolctx: bool) -> tuple[list[int], bool]:
    steps: list[Any] = [[function_call("fetch_records", {"i": i}, call_id=f"c{i}")] for i in range(CALLS)]
    model = ScriptedModel([*steps, [assistant_message("done")]])
    tools = persist_tools([fetch_records]) if with_toolctx else [fetch_records]
    config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_tool_outputs() if with_toolctx else None)
    agent = Agent(name="collector", model=model, tools=tools)
    with tempfile.TemporaryDirectory() as tmp, toolctx.session(tmp, memory_budget=1 << 30) as s:
        asyncio.run(Runner.run(agent, "Collect every record set.", run_config=config, max_turns=CALLS + 5))
        readable = read_everything(s) if with_toolctx else True
    return [estimate_input_tokens(call.input) for call in model.calls], readable


# -- adapter overhead --------------------------------------------------------------------------


def per_call(func: Any, number: int) -> float:
    runs = []
    for _ in range(7):
        start = time.perf_counter()
        for i in range(number):
            func(i)
        runs.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(runs)


def overhead(size: int) -> dict[str, float]:
    text = ("revenue region quarter growth " * (size // 30 + 1))[:size]
    middleware = ToolContextMiddleware()
    message = ToolMessage(content=text, tool_call_id="c", name="fetch")

    class Request:  # the parts of a ToolCallRequest the middleware reads
        def __init__(self, i: int) -> None:
            self.tool_call = {"name": "fetch", "args": {"i": i}, "id": f"c{i}"}
            self.state = {"messages": [HumanMessage("question")]}
            self.runtime = None

    [persisted] = persist_tools([fetch_records])

    async def plain_invoke(ctx: Any, arguments: str) -> str:
        return text

    persisted.on_invoke_tool.invoke = plain_invoke  # type: ignore[attr-defined]
    loop = asyncio.new_event_loop()
    contexts = [
        ToolContext(None, tool_name="fetch", tool_call_id=f"c{i}", tool_arguments=f'{{"i": {i}}}') for i in range(2000)
    ]
    number = 300 if size > 30_000 else 2000
    row: dict[str, float] = {}
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(dir=shm) as tmp, toolctx.session(tmp, memory_budget=1 << 30) as s:
        row["core save_context"] = per_call(lambda i: s.save_context("fetch", {"i": i}, text, call_id=f"c{i}"), number)
        row["langchain middleware"] = per_call(
            lambda i: middleware.wrap_tool_call(Request(i), lambda r: message), number
        )
        row["agents persist_tools"] = per_call(
            lambda i: loop.run_until_complete(persisted.on_invoke_tool(contexts[i % 2000], f'{{"i": {i}}}')), number
        )
    loop.close()
    return row


def main() -> None:
    print(f"{CALLS} tool calls, outputs {min(map(len, OUTPUTS)):,} to {max(map(len, OUTPUTS)):,} characters\n")
    print("| framework | tokens at the last model call, as is | with toolctx | fewer | every output readable back |")
    print("|---|---:|---:|---:|---|")
    for name, run in (("LangChain create_agent", langchain_run), ("OpenAI Agents SDK Runner.run", agents_run)):
        plain, _ = run(False)
        reduced, readable = run(True)
        fewer = 1 - reduced[-1] / plain[-1]
        print(f"| {name} | {plain[-1]:,} | {reduced[-1]:,} | {fewer:.1%} | {'yes' if readable else 'NO'} |", flush=True)
    print("\n| µs per tool call | 4 KB output | 100 KB output |")
    print("|---|---:|---:|")
    small, large = overhead(4 * 1024), overhead(100 * 1024)
    for key in small:
        print(f"| {key} | {small[key]:,.1f} | {large[key]:,.1f} |")
    for key in ("langchain middleware", "agents persist_tools"):
        extra_small = small[key] - small["core save_context"]
        extra_large = large[key] - large["core save_context"]
        print(f"| {key} beyond the core | {extra_small:,.1f} | {extra_large:,.1f} |")


if __name__ == "__main__":
    main()
