"""The Agents SDK adapter beside what users already run: their own input filter, and tools of MCP servers."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.mcp import MCPServerStdio
from agents.run_config import CallModelData, ModelInputData
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from toolctx_openai_agents import ToolContextHooks, compact_tool_outputs, persist_tools, read_context

import toolctx
from toolctx.compaction import handle_of, is_stand_in, stored_text

from .test_langchain import BIG

NOTE = "Answer in French."


def outputs(model: ScriptedModel, call: int = -1) -> dict[str, str]:
    items = [i for i in model.calls[call].input if isinstance(i, dict)]
    return {i["call_id"]: str(i["output"]) for i in items if i.get("type") == "function_call_output"}


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_the_users_input_filter_runs_first(context_dir: Path, kind: str) -> None:
    @function_tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return "".join(f"{command}: src/module_{i}.py ok\n" for i in range(60))

    seen: list[int] = []

    def add_note(data: CallModelData[Any]) -> ModelInputData:
        seen.append(len(data.model_data.input))
        return ModelInputData(input=list(data.model_data.input), instructions=NOTE)

    async def add_note_later(data: CallModelData[Any]) -> ModelInputData:
        await asyncio.sleep(0)
        return add_note(data)

    model = ScriptedModel(
        [
            *[[function_call("shell", {"command": f"pytest -k t{i}"}, call_id=f"s{i}")] for i in range(5)],
            [assistant_message("done")],
        ]
    )
    theirs = add_note if kind == "sync" else add_note_later
    ours = compact_tool_outputs(high_water=1200, low_water=0, keep=1, min_gain=0, cached_price=1.0, after=theirs)
    agent = Agent(name="coder", model=model, tools=[*persist_tools([shell]), read_context])
    with toolctx.session(context_dir) as s:
        asyncio.run(
            Runner.run(
                agent, "Run the tests.", run_config=RunConfig(tracing_disabled=True, call_model_input_filter=ours)
            )
        )
        assert len(seen) == len(model.calls)  # theirs ran on every call
        assert all(call.system_instructions == NOTE for call in model.calls)  # what theirs returned was sent
        shown = outputs(model)
        stood_in = [c for c, text in shown.items() if is_stand_in(text)]
        assert stood_in  # and toolctx compacted it
        for call_id in stood_in:
            [stored] = s.load_contexts([f"ctx:{handle_of(shown[call_id])}"])
            assert stored.call_id == call_id


def test_a_filter_that_is_not_one_is_refused() -> None:
    with pytest.raises(TypeError, match="after must be"):
        compact_tool_outputs(after="trim")  # type: ignore[arg-type]


SERVER = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("reports")
BIG = {big!r}


@server.tool()
def fetch_report(region: str) -> str:
    '''Fetch the revenue report of a region.'''
    return BIG


server.run()
"""


def test_tools_of_an_mcp_server_get_stand_ins(context_dir: Path, tmp_path: Path) -> None:
    """MCP tools reach the agent at run time, not through persist_tools: the filter stores and stands in for them."""
    script = tmp_path / "server.py"
    script.write_text(SERVER.format(big=BIG))
    shown: dict[str, str] = {}

    def read_it(data: CallModelData[Any]) -> list[Any]:
        text = [str(i["output"]) for i in data.input if isinstance(i, dict) and i.get("type") == "function_call_output"]
        shown["first"] = text[-1]
        return [function_call("read_context", {"id": f"ctx:{handle_of(text[-1])}", "limit": 100}, call_id="r1")]

    model = ScriptedModel(
        [
            [function_call("fetch_report", {"region": "emea"}, call_id="m1")],
            ModelStep.respond(read_it),
            [assistant_message("done")],
        ]
    )

    async def run() -> None:
        async with MCPServerStdio(params={"command": sys.executable, "args": [str(script)]}) as server:
            agent = Agent(name="analyst", model=model, tools=[read_context], mcp_servers=[server])
            config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_tool_outputs())
            await Runner.run(agent, "Get the EMEA report.", hooks=ToolContextHooks(), run_config=config)

    with toolctx.session(context_dir) as s:
        asyncio.run(run())
        [pointer] = s.get_all_pointers()
        [stored] = s.load_contexts([pointer])
    assert is_stand_in(shown["first"])
    assert pointer.call_id == "m1"
    assert stored.tool_name == "fetch_report"
    assert stored_text(stored) == BIG
    assert outputs(model)["r1"].split("\n", 1)[1] == BIG[:100]
