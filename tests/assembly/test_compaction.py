"""Compaction by priority: the order, the log, restorable history, summaries, pins, failing plugins, strategies."""

from __future__ import annotations

from typing import Any

import pytest

import toolctx
from toolctx.assembly import (
    HISTORY,
    CompactionPlan,
    ContextAssembler,
    Event,
    HistoryMessage,
    PlanPlugin,
    StrategyInput,
    ToolOutputPlugin,
)
from toolctx.compaction import handle_of, is_stand_in, read_context
from toolctx.tokens import TokenCounter

from .conftest import CharCounter, orphans, recount, run, tool_turn


class Shrinking:
    """A compactable plugin whose content halves on each compact()."""

    compactable = True

    def __init__(self, name: str, priority: int, size: int) -> None:
        self.name, self.priority, self.size = name, priority, size
        self.calls: list[int] = []

    def get_component(self) -> str:
        return "m" * self.size

    def compact(self, target_tokens: int, counter: TokenCounter) -> int:
        self.calls.append(target_tokens)
        before = self.size
        self.size = max(target_tokens, 0) if target_tokens < self.size else self.size // 2
        return before - self.size


def chat(ctx: ContextAssembler, turns: int, size: int = 100) -> None:
    for i in range(turns):
        ctx.add_message("user", f"question {i} " + "q" * size)
        ctx.add_message("assistant", f"answer {i} " + "a" * size)


def test_highest_priority_compacts_first_and_each_step_is_measured(s: toolctx.ContextSession) -> None:
    ctx = ContextAssembler(max_tokens=4000, counter=CharCounter(), session=s, history_priority=6)
    low, high = Shrinking("low", 2, 1500), Shrinking("high", 9, 1500)
    ctx.register_plugin(low)
    ctx.register_plugin(high)
    chat(ctx, 6)
    compacted: list[Event] = []
    ctx.on("compacted", compacted.append)
    prepared = run(ctx.prepare())
    assert [step.component for step in prepared.log][:2] == ["high", HISTORY]
    assert prepared.budget.used <= int(0.5 * 4000)  # proactive: down to the low-water mark
    assert sum(step.freed for step in prepared.log) == compacted[0].data["freed"]
    assert prepared.budget.used == recount(prepared.to_openai(), prepared.tools, CharCounter())
    assert compacted[0].data["budget"] == prepared.budget


def test_compacted_history_is_stored_and_reachable_by_handle(s: toolctx.ContextSession) -> None:
    ctx = ContextAssembler(max_tokens=3000, counter=CharCounter(), session=s, preserve_recent=4)
    chat(ctx, 12)
    prepared = run(ctx.prepare())
    [span] = ctx.spans
    marker = next(m for m in prepared.history if m.id == f"{span.handle}:marker")
    assert handle_of(marker.content) == span.handle.removeprefix("ctx:")
    originals = [m for m in ctx.get_history() if m.id in span.message_ids]
    assert ctx.expand(span.handle) == originals
    stored = read_context(s, span.handle, 0, 10**9)
    assert originals[0].content in stored
    assert len(ctx.get_history()) == 24  # the full history is kept
    ctx.uncompact(span.handle)
    assert len(run(ctx.prepare()).history) < 24  # compacted again, the same way
    assert ctx.spans[0].message_ids == span.message_ids


def test_a_history_marker_brings_read_context_in_when_the_plugin_can_read_it(s: toolctx.ContextSession) -> None:
    # The marker of compacted history names read_context: with the tool-output plugin registered, the
    # model is offered it in the same call, whether or not any tool output was ever stood in for.
    plugin = ToolOutputPlugin(session=s)
    ctx = ContextAssembler(max_tokens=3000, counter=CharCounter(), session=s, preserve_recent=4)
    ctx.register_plugin(plugin)
    chat(ctx, 12)
    prepared = run(ctx.prepare())
    span = ctx.spans[0]
    assert "read_context" in [t["function"]["name"] for t in prepared.tools]
    assert prepared.budget.used == recount(prepared.to_openai(), prepared.tools, CharCounter())
    assert "question 0 " in plugin.read(span.handle, 0, 10**6)
    alone = ContextAssembler(max_tokens=3000, counter=CharCounter(), session=s, preserve_recent=4)
    chat(alone, 12)
    assert "read_context" not in [t["function"]["name"] for t in run(alone.prepare()).tools]  # nothing would serve it
    # Another conversation of the same session does not read this one's history, nor this one its.
    theirs = ToolOutputPlugin(session=s)
    other = ContextAssembler(max_tokens=3000, counter=CharCounter(), session=s, preserve_recent=4, plugins=[theirs])
    chat(other, 12)
    run(other.prepare())
    assert theirs.read(span.handle, 0, 10**6).startswith("No stored output")
    assert plugin.read(other.spans[0].handle, 0, 10**6).startswith("No stored output")
    assert "question 0 " in theirs.read(other.spans[0].handle, 0, 10**6)
    # restored in a new assembler (another process, say), the conversation reads its history as before
    again = ContextAssembler(max_tokens=3000, counter=CharCounter(), session=s, plugins=[ToolOutputPlugin(session=s)])
    again.restore_state(ctx.get_state())
    assert "question 0 " in again.get_plugin("tool_outputs").read(span.handle, 0, 10**6)


def test_a_summary_is_shown_with_the_marker_and_the_messages_stay_stored(s: toolctx.ContextSession) -> None:
    seen: list[list[HistoryMessage]] = []

    async def summarize(messages: list[HistoryMessage]) -> str:
        seen.append(messages)
        return f"{len(messages)} messages about questions"

    ctx = ContextAssembler(max_tokens=3000, counter=CharCounter(), session=s, summarizer=summarize, strategy="adaptive")
    chat(ctx, 12)
    prepared = run(ctx.prepare())
    [span] = ctx.spans
    assert span.summary == f"{len(span.message_ids)} messages about questions"
    assert "summarized" in [step.action for step in prepared.log]
    assert seen[0] == ctx.expand(span.handle)
    assert f"Summary of them: {span.summary}" in prepared.to_openai()[0]["content"]


def test_a_summary_that_does_not_fit_is_left_out() -> None:
    ctx = ContextAssembler(
        max_tokens=3000, counter=CharCounter(), summarizer=lambda ms: "s" * 5000, strategy="adaptive"
    )
    chat(ctx, 12)
    with toolctx.session():
        prepared = run(ctx.prepare())
    assert ctx.spans[0].summary is None
    assert prepared.budget.used < 0.75 * 3000


def test_pinned_messages_and_never_compacted_parts_survive_byte_for_byte(s: toolctx.ContextSession) -> None:
    ctx = ContextAssembler(
        max_tokens=2500, counter=CharCounter(), session=s, system_prompt="rules " * 20, preserve_recent=0
    )
    ctx.register_plugin(PlanPlugin({"goal": "g", "tasks": [{"id": "1", "description": "d" * 200}]}))
    ctx.register_plugin(Shrinking("notes", 5, 800))
    pinned = ctx.add_message("user", "PROJECT RULES: " + "r" * 300, pinned=True)
    chat(ctx, 10)
    current = ctx.set_current_input("do it " * 30)
    chat(ctx, 3)
    prepared = run(ctx.prepare())
    contents = [m["content"] for m in prepared.to_openai()]
    assert ("rules " * 20) in contents[0]
    assert pinned.content in contents
    assert current.content in contents
    assert any("d" * 200 in c for c in contents if c)
    assert prepared.budget.used <= 2500


def test_a_plugin_that_raises_or_frees_nothing_is_logged_and_the_pipeline_goes_on(s: toolctx.ContextSession) -> None:
    class Failing(Shrinking):
        def compact(self, target_tokens: int, counter: TokenCounter) -> int:
            raise RuntimeError("cannot shrink")

    class Stubborn(Shrinking):
        def compact(self, target_tokens: int, counter: TokenCounter) -> int:
            return 0

    ctx = ContextAssembler(max_tokens=3000, counter=CharCounter(), session=s, preserve_recent=0)
    ctx.register_plugin(Failing("failing", 9, 400))
    ctx.register_plugin(Stubborn("stubborn", 8, 400))
    chat(ctx, 12)
    errors: list[Event] = []
    ctx.on("plugin_error", errors.append)
    with pytest.warns(toolctx.ToolctxWarning, match="cannot shrink"):
        prepared = run(ctx.prepare())
    actions = {(step.component, step.action) for step in prepared.log}
    assert ("failing", "failed") in actions
    assert ("stubborn", "nothing") in actions
    assert (HISTORY, "compacted") in actions
    assert errors[0].data["plugin"] == "failing"
    assert prepared.budget.used <= 3000


def test_when_nothing_more_can_go_the_status_says_critical() -> None:
    class Stubborn(Shrinking):
        def compact(self, target_tokens: int, counter: TokenCounter) -> int:
            return 0

    ctx = ContextAssembler(max_tokens=1000, counter=CharCounter())
    ctx.register_plugin(Stubborn("stubborn", 8, 920))
    critical: list[Event] = []
    ctx.on("budget_critical", critical.append)
    prepared = run(ctx.prepare())
    assert prepared.budget.status == "critical"  # 92 % of the limit, and nothing else to compact
    assert prepared.budget.used <= 1000
    assert critical


def test_lazy_waits_until_the_context_would_not_fit(s: toolctx.ContextSession) -> None:
    ctx = ContextAssembler(max_tokens=5000, counter=CharCounter(), session=s, strategy="lazy")
    chat(ctx, 20)  # about 4,780 tokens: critical, but it fits
    assert run(ctx.prepare()).compacted is False
    chat(ctx, 2)
    prepared = run(ctx.prepare())
    assert prepared.compacted
    assert 0.9 * 5000 <= prepared.budget.used <= 5000  # just enough, not down to a low-water mark


def test_adaptive_takes_plugins_before_the_history(s: toolctx.ContextSession) -> None:
    ctx = ContextAssembler(max_tokens=4000, counter=CharCounter(), session=s, strategy="adaptive", history_priority=9)
    ctx.register_plugin(Shrinking("memory", 2, 1200))
    chat(ctx, 10)
    prepared = run(ctx.prepare())
    assert prepared.log[0].component == "memory"
    assert prepared.budget.status == "ok"
    assert prepared.budget.used >= 0.6 * 4000  # to just under the warning mark


def test_a_strategy_of_your_own(s: toolctx.ContextSession) -> None:
    seen: list[StrategyInput] = []

    def only_history(state: StrategyInput) -> CompactionPlan | None:
        seen.append(state)
        return CompactionPlan(target=1000, order=(HISTORY,)) if state.budget.used > 1500 else None

    ctx = ContextAssembler(
        max_tokens=10_000, counter=CharCounter(), session=s, strategy=only_history, preserve_recent=2
    )
    ctx.register_plugin(Shrinking("big", 9, 300))
    chat(ctx, 10)
    prepared = run(ctx.prepare())
    assert [step.component for step in prepared.log] == [HISTORY]
    assert prepared.budget.used <= 1000
    assert [c.name for c in seen[0].candidates] == ["big", HISTORY]


def test_a_context_that_would_not_fit_is_compacted_whatever_the_strategy(s: toolctx.ContextSession) -> None:
    ctx = ContextAssembler(max_tokens=2000, counter=CharCounter(), session=s, strategy=lambda state: None)
    chat(ctx, 20)
    prepared = run(ctx.prepare())
    assert prepared.compacted
    assert prepared.budget.used <= 2000


def test_compact_forces_a_compaction_to_the_low_water_mark(s: toolctx.ContextSession) -> None:
    ctx = ContextAssembler(max_tokens=5000, counter=CharCounter(), session=s, preserve_recent=2)
    chat(ctx, 15)  # about 3,400 tokens: under the warning mark
    assert run(ctx.prepare()).compacted is False
    prepared = run(ctx.compact())
    assert prepared.compacted
    assert prepared.budget.used <= 2500


def test_tool_outputs_compact_first_with_the_core_policy_and_read_back(s: toolctx.ContextSession) -> None:
    plugin = ToolOutputPlugin(session=s, high_water=10**9, keep=2)  # compacts only when the assembler asks
    ctx = ContextAssembler(max_tokens=9000, counter=CharCounter(), session=s, plugins=[plugin])
    ctx.set_current_input("investigate")
    outputs = [f"output {i}: " + " ".join(f"row {i}.{j} = {j * 13}" for j in range(40)) for i in range(12)]
    for i, output in enumerate(outputs):
        tool_turn(ctx, i, output)
    prepared = run(ctx.prepare())
    assert prepared.log[0].component == "tool_outputs"
    rendered = prepared.to_openai()
    results = [m for m in rendered if m["role"] == "tool"]
    assert [m["content"] for m in results[-2:]] == outputs[-2:]  # the policy's keep window
    for message in results[:-2]:
        pointer = handle_of(message["content"])
        assert pointer is not None
        body = read_context(s, f"ctx:{pointer}", 0, 10**9).partition("\n")[2]
        assert body == outputs[int(message["tool_call_id"][1:])]
    assert orphans(rendered) == 0
    assert "read_context" in [t["function"]["name"] for t in prepared.tools]
    again = run(ctx.prepare())
    assert again.to_openai() == rendered  # decisions stand: the prompt prefix stays the same


def test_pinning_a_tool_result_keeps_it_whole(s: toolctx.ContextSession) -> None:
    plugin = ToolOutputPlugin(session=s, high_water=10**9, keep=0)
    ctx = ContextAssembler(max_tokens=5000, counter=CharCounter(), session=s, plugins=[plugin], preserve_recent=0)
    turns = [tool_turn(ctx, i, f"result {i} " + "r" * 500) for i in range(8)]
    ctx.pin(turns[0][1].id)
    rendered = run(ctx.prepare()).to_openai()
    assert turns[0][1].content in [m["content"] for m in rendered]
    assert orphans(rendered) == 0


def _messages(prepared: Any) -> list[str]:
    return [m.id for m in prepared.messages]


def test_read_context_arrives_with_the_first_stand_in_in_one_cache_break(s: toolctx.ContextSession) -> None:
    """The policy asks for read_context a call before its first batch; the tool list changes with the messages."""
    ctx = ContextAssembler(session=s, tools=[{"type": "function", "function": {"name": "shell"}}])
    ctx.register_plugin(ToolOutputPlugin(session=s))  # the adapters' defaults: batches once past 6,000 tokens
    ctx.set_current_input("investigate")
    prepared: list[list[dict[str, Any]]] = []
    tools: list[list[str]] = []
    for i in range(40):
        p = run(ctx.prepare())
        prepared.append(p.to_openai())
        tools.append([t["function"]["name"] for t in p.tools])
        tool_turn(ctx, i, f"output {i}: " + " ".join(f"row {i}.{j} = {j * 13}" for j in range(60)))
    shows = [any(is_stand_in(m["content"]) for m in messages) for messages in prepared]
    first = shows.index(True)
    assert [("read_context" in names) for names in tools] == [i >= first for i in range(len(tools))]
    # the call that brought both in is the only one whose messages are not the last call's plus new ones
    breaks = [i for i in range(1, len(prepared)) if prepared[i][: len(prepared[i - 1])] != prepared[i - 1]]
    assert first in breaks
