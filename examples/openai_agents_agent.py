"""toolctx with an OpenAI Agents SDK agent, offline: a big tool output, the stand-in, reading it back.

The SDK's ScriptedModel plays the LLM so the example runs anywhere: it asks for a
sales report (a 50 KB output), reads part of it back with the ``read_context``
tool, and answers from what it read.

    python examples/openai_agents_agent.py      (needs: pip install 'toolctx[openai-agents]')
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from toolctx_openai_agents import compact_tool_outputs, persist_tools, read_context, record_tool_errors

import toolctx

REPORT = "".join(
    f"2026-{month:02d}: region {region}, revenue {1000 + 37 * region + month} k€\n"
    for region in range(120)
    for month in range(1, 13)
)


@function_tool
def sales_report(year: int) -> str:
    """The monthly sales report of a year, every region."""
    return REPORT


def last_output(call: Any) -> str:
    outputs = [i for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return str(outputs[-1]["output"])


def read_back(call: Any) -> Any:
    handle = re.search(r"ctx:[0-9a-z]+", last_output(call)).group(0)  # type: ignore[union-attr]
    return [function_call("read_context", {"id": handle, "offset": 0, "limit": 400}, call_id="c2")]


def answer(call: Any) -> Any:
    figure = re.search(r"2026-01: region 0, revenue (\d+)", last_output(call))
    return [assistant_message(f"Region 0 made {figure.group(1) if figure else '?'} k€ in January 2026.")]


async def main() -> None:
    model = ScriptedModel(
        [
            [function_call("sales_report", {"year": 2026}, call_id="c1")],
            ModelStep.respond(read_back),
            ModelStep.respond(answer),
        ]
    )
    agent = Agent(name="analyst", model=model, tools=[*persist_tools([sales_report]), read_context])
    config = RunConfig(
        call_model_input_filter=compact_tool_outputs(), tool_error_formatter=record_tool_errors(), tracing_disabled=True
    )
    with tempfile.TemporaryDirectory(prefix="toolctx-agents-") as context_dir:
        with toolctx.session(context_dir) as s:
            result = await Runner.run(agent, "How much did region 0 make in January?", run_config=config)
            s.save_path.settle(timeout=60)  # (an async tool's large output is written by a pool thread)
            [pointer] = s.get_all_pointers()
            print(f"sales_report returned {len(REPORT):,} characters; toolctx stored them as {pointer.handle}")
            print(f"  on disk: {pointer.filename}" if pointer.filepath else "  in memory")
            stand_in = last_output(model.calls[1])
            print(f"\nWhat the model saw instead ({len(stand_in):,} characters):\n")
            print("  " + stand_in[:400].replace("\n", "\n  ") + "\n  ...")
            print("\nThe model called read_context and got:\n")
            print("  " + last_output(model.calls[2])[:300].replace("\n", "\n  "))
            print(f"\nAnswer: {result.final_output}")
            session_dir = s.session_dir
        print(f"\nSession ended: {session_dir} exists afterwards? {session_dir.exists()}")


if __name__ == "__main__":
    asyncio.run(main())
