"""The assembler's core: parts, history, plugins, budget and events, and what it does with bad input."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest

import toolctx
from toolctx.assembly import (
    CONTEXT_ID,
    HISTORY,
    AssemblerConfig,
    Component,
    ContextAssembler,
    ContextBudgetError,
    Event,
    PlanPlugin,
    ToolOutputPlugin,
    UnifiedContextManager,
)
from toolctx.errors import ConfigError

from .conftest import CharCounter, orphans, recount, run, tool_turn


def test_the_seed_name_is_the_same_class() -> None:
    assert UnifiedContextManager is ContextAssembler


def test_prepared_context_orders_stable_parts_first_and_counts_exactly(s: toolctx.ContextSession) -> None:
    tools = [{"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}}]
    ctx = ContextAssembler(
        system_prompt="You are terse.", instructions="Answer in English.", tools=tools, counter=CharCounter(), session=s
    )
    ctx.register_plugin(PlanPlugin({"goal": "ship", "tasks": [{"id": "a", "description": "write it"}]}))
    ctx.set_current_input("ship the release")
    ctx.add_message("assistant", "on it")
    prepared = run(ctx.prepare())
    rendered = prepared.to_openai()
    assert rendered[0] == {"role": "system", "content": "You are terse.\n\nAnswer in English."}
    assert rendered[1] == {"role": "user", "content": "ship the release"}
    assert rendered[2] == {"role": "assistant", "content": "on it"}
    assert rendered[-1]["content"] == "<plan>\nGoal: ship\n- [ ] a: write it\n</plan>"  # volatile parts last
    assert prepared.budget.used == recount(rendered, prepared.openai_tools(), CharCounter())
    assert prepared.budget.by_part["current_input"] == 3 + len("user") + len("ship the release")  # framing, role, text
    assert prepared.budget.status == "ok"
    assert prepared.compacted is False


def test_current_input_joins_the_history_and_is_replaced_until_answered() -> None:
    ctx = ContextAssembler()
    first = ctx.set_current_input("draft")
    again = ctx.set_current_input("final question")
    assert again.id == first.id
    assert [m.content for m in ctx.get_history()] == ["final question"]
    ctx.add_message("assistant", "answer")
    ctx.set_current_input("next question")
    assert [m.content for m in ctx.get_history()] == ["final question", "answer", "next question"]
    assert ctx.get_current_input() == "next question"


def test_history_accessors_and_events() -> None:
    ctx = ContextAssembler()
    seen: list[Event] = []
    ctx.on("message_added", seen.append)
    ctx.on("history_cleared", seen.append)
    for i in range(5):
        ctx.add_message("user" if i % 2 == 0 else "assistant", f"m{i}", {"n": i})
    assert [m.content for m in ctx.get_recent_history(2)] == ["m3", "m4"]
    assert ctx.get_recent_history(0) == []
    assert ctx.format_history().splitlines()[:2] == ["user: m0", "assistant: m1"]
    ctx.clear_history()
    assert ctx.get_history() == []
    assert [e.name for e in seen] == ["message_added"] * 5 + ["history_cleared"]
    assert seen[0].data["message"].metadata == {"n": 0}


def test_a_listener_that_raises_does_not_stop_the_others() -> None:
    ctx = ContextAssembler()
    seen: list[str] = []

    def broken(event: Event) -> None:
        raise RuntimeError("listener bug")

    ctx.on("message_added", broken)
    ctx.on("message_added", lambda e: seen.append(e.data["message"].content))
    with pytest.warns(toolctx.ToolctxWarning, match="listener bug"):
        ctx.add_message("user", "hello")
    assert seen == ["hello"]


def test_a_function_is_a_plugin_and_async_components_work() -> None:
    ctx = ContextAssembler()

    async def clock() -> str:
        return "It is noon."

    ctx.register_plugin(clock, priority=2)
    ctx.register_plugin(
        lambda: Component(name="ignored", content="Weather: rain", priority=9), name="weather", priority=4
    )
    ctx.register_plugin(lambda: None, name="empty")
    prepared = run(ctx.prepare())
    assert [c.name for c in prepared.components] == ["clock", "weather"]
    assert [c.priority for c in prepared.components] == [2, 4]  # the plugin's own priority wins
    assert ctx.list_plugins() == ["clock", "weather", "empty"]
    ctx.unregister_plugin("weather")
    assert ctx.get_plugin("weather") is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "plan"}, "already registered"),
        ({"name": "x", "priority": -1}, "priority must be a whole number >= 0"),
        ({"name": "x", "priority": True}, "priority must be a whole number"),
        ({"name": "x", "compactable": "yes"}, "compactable must be True or False"),
        ({"name": ""}, "non-empty name"),
        ({"name": HISTORY}, "taken by a built-in part"),
    ],
)
def test_bad_plugins_are_refused_when_registered(kwargs: dict[str, Any], message: str) -> None:
    ctx = ContextAssembler(plugins=[PlanPlugin()])
    with pytest.raises(ConfigError, match=message):
        ctx.register_plugin(lambda: "x", **kwargs)
    assert ctx.list_plugins() == ["plan"]


def test_an_object_without_get_component_is_not_a_plugin() -> None:
    class NotAPlugin:
        name = "broken"
        priority = 1
        compactable = True

    with pytest.raises(ConfigError, match="no get_component"):
        ContextAssembler().register_plugin(NotAPlugin())


def test_a_budget_smaller_than_the_never_compacted_parts_says_by_how_much() -> None:
    ctx = ContextAssembler(max_tokens=50, counter=CharCounter(), system_prompt="s" * 60)
    with pytest.raises(ContextBudgetError, match=r"need 72 tokens, 22 more than the limit of 50"):
        run(ctx.prepare())
    assert ctx.get_system_prompt() == "s" * 60  # nothing changed


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": 100, "response_reserve": 100}, "response_reserve"),
        ({"warning_threshold": 0.95, "critical_threshold": 0.9}, "warning_threshold"),
        ({"maximum": 5}, "maximum"),
    ],
)
def test_bad_options_name_the_value(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ContextAssembler(**options)


def test_update_config_keeps_other_options_and_checks_the_result() -> None:
    ctx = ContextAssembler(max_tokens=10_000, preserve_recent=3)
    config = ctx.update_config(max_tokens=20_000)
    assert config == AssemblerConfig(max_tokens=20_000, preserve_recent=3)
    assert ctx.get_config().limit == 20_000
    with pytest.raises(ConfigError, match="response_reserve"):
        ctx.update_config({"response_reserve": 30_000})
    assert ctx.get_config().max_tokens == 20_000


def test_bad_messages_are_refused() -> None:
    ctx = ContextAssembler()
    with pytest.raises(ConfigError, match="tool_call_id"):
        ctx.add_message("tool", "result")
    with pytest.raises(ConfigError, match="role"):
        ctx.add_message("robot", "hi")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="metadata must be a dict of JSON values"):
        ctx.add_message("user", "hi", {"when": object()})
    with pytest.raises(ConfigError, match="no tool call 'nope'"):
        ctx.add_tool_result("nope", "x")
    ctx.add_message("user", "hi", id="one")
    with pytest.raises(ConfigError, match="already in the history"):
        ctx.add_message("user", "again", id="one")
    assert [m.id for m in ctx.get_history()] == ["one"]


def test_tool_results_are_stored_and_big_ones_stand_in(s: toolctx.ContextSession) -> None:
    ctx = ContextAssembler(session=s, plugins=[ToolOutputPlugin(session=s, max_output_tokens=50)])
    _, small = tool_turn(ctx, 1, "ok")
    text = " ".join(f"line {i}: value {i * 7}" for i in range(400))
    _, big = tool_turn(ctx, 2, text)
    assert small.content == "ok"
    assert big.content.startswith("[toolctx stand-in]")
    [pointer] = [p for p in s.get_all_pointers() if p.call_id == "c2"]
    assert pointer.task_id is not None  # (stored under the assembler's conversation)
    assert big.metadata["toolctx"] == pointer.id
    assert s.load_contexts([pointer.id])[0].result == text
    prepared = run(ctx.prepare())
    assert "read_context" in [t["function"]["name"] for t in prepared.tools]


def test_unanswered_calls_and_stray_results_never_reach_the_model() -> None:
    ctx = ContextAssembler()
    ctx.add_message("user", "go")
    ctx.add_message("tool", "stray", tool_call_id="ghost")
    ctx.add_message("assistant", "", tool_calls=[{"id": "a", "name": "t", "arguments": "{}"}, {"id": "b", "name": "t"}])
    ctx.add_message("user", "interrupting")
    ctx.add_message("tool", "late answer to a", tool_call_id="a")
    ctx.add_message("tool", "a second answer to a", tool_call_id="a")
    rendered = run(ctx.prepare()).to_openai()
    assert orphans(rendered) == 0
    tools = [m for m in rendered if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tools] == [
        ("a", "late answer to a"),
        ("b", "[no result was recorded for this tool call]"),
    ]
    assert len(ctx.get_history()) == 6  # the history itself is left as it was


def test_get_budget_and_utilization_follow_new_messages() -> None:
    ctx = ContextAssembler(max_tokens=1000, counter=CharCounter())
    run(ctx.prepare())
    before = ctx.get_budget().used
    ctx.add_message("user", "x" * 93)
    assert ctx.get_budget().used == before + 3 + len("user") + 93  # framing, role, text
    assert ctx.get_utilization() == pytest.approx(100 * (before + 100) / 1000)
    assert ctx.estimate_tokens({"a": 1}) == len('{"a":1}')


def test_components_message_role_is_an_option() -> None:
    ctx = ContextAssembler(context_role="user")
    ctx.register_plugin(lambda: "facts", name="facts")
    prepared = run(ctx.prepare())
    assert prepared.messages[-1].id == CONTEXT_ID
    assert prepared.to_openai()[-1] == {"role": "user", "content": "<facts>\nfacts\n</facts>"}


def test_metrics_count_prepares_and_compactions(s: toolctx.ContextSession) -> None:
    ctx = ContextAssembler(max_tokens=2000, counter=CharCounter(), session=s, preserve_recent=2)
    for i in range(30):
        ctx.add_message("user" if i % 2 == 0 else "assistant", f"message {i} " * 10)
    run(ctx.prepare())
    metrics = ctx.get_metrics()
    assert metrics["prepares"] == 1
    assert metrics["compactions"] == 1
    assert metrics["tokens_freed"] > 0
    assert metrics["compacted_messages"] + metrics["shown_messages"] - metrics["compacted_spans"] == 30
    assert metrics["counter"] == "chars"


def test_without_optional_packages_it_counts_with_the_estimate_and_names_the_extra(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in {'sqlalchemy', 'langchain', 'langchain_core', 'rs_bpe'}:\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import asyncio, toolctx.assembly as a\n"
        "c = a.ContextAssembler()\n"
        "c.set_current_input('hi')\n"
        "p = asyncio.run(c.prepare())\n"
        "print(c.get_metrics()['counter'], p.budget.used)\n"
        "try:\n"
        "    p.to_langchain()\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    env = {**os.environ, "TOOLCTX_CONTEXT_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["estimate 8", "to_langchain() needs LangChain: pip install 'toolctx[langchain]'"]


@pytest.mark.parametrize("system_words", [0, 30_000])
def test_the_first_stand_in_weighs_the_system_prompt_and_tools_it_re_sends(
    s: toolctx.ContextSession, system_words: int
) -> None:
    """As in the adapters: the first stand-in brings read_context into the tool list, re-sending the whole
    prompt once; behind a long system prompt an output that frees too little for that is shown whole."""
    ctx = ContextAssembler(
        session=s, system_prompt=" ".join(["policy"] * system_words), plugins=[ToolOutputPlugin(session=s)]
    )
    ctx.add_message("user", "find me a flight")
    run(ctx.prepare())
    text = " ".join(f'{{"flight": "HAT{i:03d}", "price": {100 + i}}}' for i in range(300))  # about 4,800 tokens
    _, shown = tool_turn(ctx, 1, text)
    if system_words:
        assert shown.content == text
    else:
        assert shown.content.startswith("[toolctx stand-in]")


class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __str__(self) -> str:
        raise RuntimeError("no str")


def _nested(levels: int) -> list[Any]:
    outer: list[Any] = []
    inner = outer
    for _ in range(levels):
        inner.append([])
        inner = inner[0]
    return outer


@pytest.mark.parametrize(
    "output",
    [_nested(1000), _Unprintable(), {"found": [_Unprintable()]}, 10**5000 + 7, [10**5000 + 7], [{"type": ["x"]}]],
    ids=["deep", "unprintable", "unprintable-inside", "huge-int", "huge-int-inside", "unhashable-block-type"],
)
@pytest.mark.parametrize("plugin", [True, False], ids=["stored", "no-plugin"])
def test_a_tool_result_the_decorator_stores_is_taken_and_shown_as_stored(
    s: toolctx.ContextSession, output: Any, plugin: bool
) -> None:
    @toolctx.persist_context
    def tool() -> Any:
        return output

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", toolctx.ToolctxWarning)  # (the fallback form is announced; said elsewhere)
        tool()
        [decorated] = s.load_contexts(s.get_all_pointers())
        ctx = ContextAssembler(
            session=s,
            plugins=[ToolOutputPlugin(session=s, max_output_tokens=10**6)] if plugin else [],
        )
        ctx.add_message("assistant", "", tool_calls=[{"id": "c1", "name": "tool", "arguments": {}}])
        message = ctx.add_tool_result("c1", output)
    assert orjson.loads(message.content) == decorated.result
    if plugin:
        [stored] = s.load_contexts([message.metadata["toolctx"]])
        assert stored.result == decorated.result
    assert ctx.estimate_tokens(output) > 0
    assert orphans(run(ctx.prepare()).to_openai()) == 0
