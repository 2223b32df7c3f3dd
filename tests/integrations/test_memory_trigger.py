"""The adapters drive a tiered memory's trigger before every model call (needs toolctx[memory])."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from toolctx_openai_agents import compact_tool_outputs, persist_tools, read_context

import toolctx
from toolctx.tokens import estimate_tokens


def test_a_tiered_memory_flash_saves_before_a_model_call_that_nears_the_window(
    context_dir: Path, tmp_path: Path
) -> None:
    """The adapters' before_model_call hook drives the memory's trigger: a flash save at 80 % of the window."""
    from toolctx.memory import MemoryStore

    @function_tool
    def shell(command: str) -> str:
        """Run a shell command."""
        return "".join(f"{command}: src/module_{i}.py ok\n" for i in range(60))

    store = MemoryStore(f"sqlite:///{tmp_path / 'memory.db'}")
    store.agent("coder").save("TASK", "fix the failing test")
    seen: list[int] = []

    def trigger(tokens: int) -> None:
        seen.append(tokens)
        store.before_model_call("coder", tokens, window=2_000)

    model = ScriptedModel(
        [
            *[[function_call("shell", {"command": f"pytest -k t{i}"}, call_id=f"s{i}")] for i in range(4)],
            [assistant_message("done")],
        ]
    )
    rules = "Work in small steps and run the tests after every change. " * 20
    agent = Agent(name="coder", instructions=rules, model=model, tools=[*persist_tools([shell]), read_context])
    config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_tool_outputs(before_model_call=trigger))
    try:
        with toolctx.session(context_dir):
            asyncio.run(Runner.run(agent, "Run the tests.", run_config=config))
        assert len(seen) == len(model.calls)  # once per model call, with the prompt's growing size
        assert seen[0] > estimate_tokens(rules)  # the whole prompt: instructions and tools count too
        assert seen == sorted(seen)
        assert seen[-1] > 1_600  # past 80 % of the window...
        assert store.agent("coder").checkpoints()  # ...so the memory flash-saved
    finally:
        store.close()

    with pytest.raises(TypeError, match="before_model_call"):
        compact_tool_outputs(before_model_call=1600)  # type: ignore[arg-type]
