"""Seed 004's promises, black-box: the tool-output window, pinned components, exact counts, the budget, option names."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import toolctx
from toolctx.assembly import (
    AssemblerConfig,
    Component,
    ContextAssembler,
    PlanPlugin,
    ToolOutputPlugin,
)
from toolctx.errors import ConfigError
from toolctx.testing import fixed_session
from toolctx.tokens import EstimateCounter, TokenCounter, count_request, get_counter

from .conftest import CharCounter, run, tool_turn

BIG = " ".join(f"line {i}: value {i * 7}" for i in range(400))


# -- ToolOutputPlugin.add_output and its window -------------------------------------------------------------------


def test_add_output_stores_the_result_and_the_component_shows_the_recent_window(s: toolctx.ContextSession) -> None:
    outputs = ToolOutputPlugin(session=s, max_outputs=3, max_output_tokens=50)
    ctx = ContextAssembler(session=s, counter=CharCounter(), plugins=[outputs])
    added = [outputs.add_output("search", f"hit {n}") for n in range(5)]
    assert [o.output for o in outputs.recent_outputs()] == ["hit 2", "hit 3", "hit 4"]
    for output in added:  # every result is in the session, shown or not
        assert output.handle is not None
        assert s.load_contexts([output.handle.removeprefix("ctx:")])[0].result == output.output
    prepared = run(ctx.prepare())
    [component] = prepared.components
    assert component.name == "tool_outputs"
    assert "hit 4" in component.content
    assert "hit 2" in component.content
    assert "hit 1" not in component.content
    assert "hit 0" not in component.content
    assert str(added[4].handle) in component.content
    assert "read_context" not in [t["function"]["name"] for t in prepared.tools]  # nothing stands in yet

    big = outputs.add_output("dump", BIG)
    assert big.output.startswith("[toolctx stand-in]")
    assert big.handle is not None
    assert big.handle in big.output
    assert s.load_contexts([big.handle.removeprefix("ctx:")])[0].result == BIG
    prepared = run(ctx.prepare())
    assert big.output in prepared.components[0].content
    assert "read_context" in [t["function"]["name"] for t in prepared.tools]
    rendered = prepared.to_openai()
    assert prepared.budget.used == count_request(rendered, tools=prepared.openai_tools(), counter=CharCounter())


def test_the_window_holds_at_most_twice_its_size_and_refuses_bad_options(s: toolctx.ContextSession) -> None:
    outputs = ToolOutputPlugin(session=s, max_outputs=2)
    for n in range(5):
        outputs.add_output("t", f"r{n}")
    held = [o["output"] for o in outputs.get_state()["outputs"]]
    assert held == ["r3", "r4"]  # over 2 x 2 held: the newest 2 kept (all five stay in the session)
    assert len(s.get_all_pointers()) == 5
    with pytest.raises(ConfigError, match="max_outputs must be a whole number >= 1, got 0"):
        ToolOutputPlugin(session=s, max_outputs=0)
    with pytest.raises(ConfigError, match="tool_name must be a non-empty str"):
        outputs.add_output("", "x")


def test_add_output_and_record_store_the_same_way(s: toolctx.ContextSession) -> None:
    outputs = ToolOutputPlugin(session=s, max_output_tokens=50)
    ctx = ContextAssembler(session=s, plugins=[outputs])
    _, message = tool_turn(ctx, 1, BIG)
    added = outputs.add_output("shell", BIG, arguments={"cmd": "ls 1"})
    assert message.content.replace(message.metadata["toolctx"], "<id>") == added.output.replace(
        str(added.handle).removeprefix("ctx:"), "<id>"
    )
    failed = outputs.add_output("shell", "boom", error=True)
    assert failed.is_error
    assert failed.output == "boom"
    assert s.load_contexts([str(failed.handle).removeprefix("ctx:")])[0].error is not None


def test_compaction_keeps_the_newest_half_of_the_window_and_the_state_keeps_it(s: toolctx.ContextSession) -> None:
    outputs = ToolOutputPlugin(session=s, max_outputs=6, high_water=10**9)
    ctx = ContextAssembler(session=s, counter=CharCounter(), plugins=[outputs], max_tokens=2000, low_water=0.2)
    for n in range(6):
        outputs.add_output("t", f"result {n} " + "x" * 100)
    before = run(ctx.prepare())
    assert not before.compacted
    assert len(outputs.recent_outputs()) == 6
    shrunk = run(ctx.compact())  # down to the low-water mark, 400 tokens
    assert [o.output[:8] for o in outputs.recent_outputs()] == ["result 3", "result 4", "result 5"]
    assert shrunk.budget.used < before.budget.used
    assert any(step.component == "tool_outputs" and step.freed > 0 for step in shrunk.log)

    few = ToolOutputPlugin(session=s, max_outputs=10, high_water=10**9)
    small = ContextAssembler(session=s, counter=CharCounter(), plugins=[few], max_tokens=2000, low_water=0.05)
    for n in range(3):
        few.add_output("t", f"result {n} " + "x" * 100)
    run(small.compact())
    assert len(few.recent_outputs()) == 3  # fewer than half the window: all are its newest half

    again = ToolOutputPlugin(session=s, max_outputs=6)
    fresh = ContextAssembler(session=s, counter=CharCounter(), plugins=[again])
    fresh.restore_state(ctx.get_state().model_dump_json())
    assert again.recent_outputs() == outputs.recent_outputs()


def test_a_bad_plugin_state_leaves_the_plugin_as_it_was(s: toolctx.ContextSession) -> None:
    outputs = ToolOutputPlugin(session=s, max_outputs=4)
    outputs.add_output("t", "kept result")
    before = outputs.get_state()
    bad = {**before, "results": {"c1": "a stand-in"}, "outputs": [{"tool": 3}]}
    with pytest.raises(ConfigError, match="tool-output plugin state"):
        outputs.restore_state(bad)
    assert outputs.get_state() == before  # nothing of the bad state was taken
    assert [o.output for o in outputs.recent_outputs()] == ["kept result"]


# -- a pinned component is never compacted ------------------------------------------------------------------------


class PinnedNotes:
    """A compactable plugin whose component says it is pinned."""

    name, priority, compactable = "notes", 9, True

    def __init__(self) -> None:
        self.compactions = 0

    def get_component(self) -> Component:
        return Component(name="notes", content="n" * 400, pinned=True)

    def compact(self, target_tokens: int, counter: TokenCounter) -> int:
        self.compactions += 1
        return 0


@pytest.mark.parametrize("strategy", ["proactive", "lazy", "adaptive"])
def test_a_pinned_component_is_never_compacted_or_left_out(s: toolctx.ContextSession, strategy: str) -> None:
    notes = PinnedNotes()
    ctx = ContextAssembler(max_tokens=1000, counter=CharCounter(), session=s, strategy=strategy, preserve_recent=0)
    ctx.register_plugin(notes)
    for n in range(10):
        ctx.add_message("user", f"q{n} " + "q" * 60)
    for prepared in (run(ctx.prepare()), run(ctx.compact())):
        assert prepared.budget.used <= 1000
        assert [c.content for c in prepared.components] == ["n" * 400]
        assert "notes" not in [step.component for step in prepared.log]
    assert notes.compactions == 0


# -- the assembler counts what count_request counts ---------------------------------------------------------------


def _conversation(counter: TokenCounter, s: toolctx.ContextSession, max_tokens: int = 10**6) -> ContextAssembler:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "shell",
                "description": "Run a shell command.",
                "parameters": {
                    "type": "object",
                    "properties": {"cmd": {"type": "string", "description": "the command"}},
                    "required": ["cmd"],
                },
            },
        }
    ]
    ctx = ContextAssembler(
        max_tokens=max_tokens,
        counter=counter,
        session=s,
        strategy="lazy",
        system_prompt="You are a careful engineer.",
        instructions="Answer briefly.",
        tools=tools,
    )
    ctx.register_plugin(PlanPlugin({"goal": "fix the build", "tasks": [{"id": "a", "description": "read the log"}]}))
    outputs = ctx.register_plugin(ToolOutputPlugin(session=s, high_water=10**9, max_output_tokens=200))
    ctx.set_current_input("The build fails, please look.")
    for n in range(40):
        tool_turn(ctx, n, f"file_{n}.py: {n * 13} lines\n" * 3, {"cmd": f"wc -l src/{n}/*.py"})
        ctx.add_message("assistant", f"Checked part {n}.")
    outputs.add_output("search", BIG)
    return ctx


@pytest.mark.parametrize("counter", [get_counter("o200k_base"), EstimateCounter()], ids=["exact", "estimate"])
def test_reported_tokens_equal_count_request_on_the_prepared_openai_request(
    context_dir: Path, counter: TokenCounter
) -> None:
    # (each conversation in a session of its own numbered from 0: both show the same handles, so the same tokens)
    with fixed_session(context_dir / "first") as s:
        ctx = _conversation(counter, s)
        budget = ctx.get_budget()
        prepared = run(ctx.prepare())
        exact = count_request(prepared.to_openai(), tools=prepared.openai_tools(), counter=counter)
        assert prepared.budget.used == exact
        assert ctx.get_budget().used == exact
        assert budget.used == exact  # no stand-in or compaction happened at this budget
    with fixed_session(context_dir / "second") as s:
        tight = _conversation(counter, s, max_tokens=exact - 1)  # one token short: it must compact to fit
        squeezed = run(tight.prepare())
        assert squeezed.compacted
        assert (
            count_request(squeezed.to_openai(), tools=squeezed.openai_tools(), counter=counter) == squeezed.budget.used
        )
        assert squeezed.budget.used <= exact - 1


# -- get_budget() before the first prepare() ----------------------------------------------------------------------


def test_get_budget_before_the_first_prepare_counts_the_plugins(s: toolctx.ContextSession) -> None:
    async def facts() -> str:
        await asyncio.sleep(0)
        return "f" * 50

    ctx = ContextAssembler(counter=CharCounter(), session=s, system_prompt="sys")
    ctx.register_plugin(PlanPlugin({"goal": "g", "tasks": [{"id": "a", "description": "do it"}]}))
    ctx.register_plugin(facts, name="facts")
    ctx.set_current_input("go")
    budget = ctx.get_budget()
    assert budget.by_part["plan"] > 0
    assert budget.by_part["facts"] == 50
    assert budget == run(ctx.prepare()).budget

    async def inside_a_loop() -> Any:
        fresh = ContextAssembler(counter=CharCounter(), session=s, system_prompt="sys")
        fresh.register_plugin(facts, name="facts")
        return fresh.get_budget()

    assert asyncio.run(inside_a_loop()).by_part["facts"] == 50


# -- seed 004's option name ---------------------------------------------------------------------------------------


def test_max_context_tokens_is_the_seeds_name_for_max_tokens() -> None:
    ctx = ContextAssembler(max_context_tokens=4000)
    assert ctx.get_config().max_tokens == 4000 == ctx.get_config().max_context_tokens
    assert ctx.get_budget().limit == 4000
    assert ctx.update_config(max_context_tokens=5000).max_tokens == 5000
    assert ContextAssembler(AssemblerConfig(max_context_tokens=3000)).get_budget().limit == 3000  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match=r"max_context_tokens \(4000\) is seed 004's name for max_tokens \(3000\)"):
        ContextAssembler(max_context_tokens=4000, max_tokens=3000)
    with pytest.raises(ConfigError, match="pass only one of them"):
        ctx.update_config({"max_context_tokens": 1, "max_tokens": 2})
    assert ctx.get_config().max_tokens == 5000  # unchanged by the refused update
