"""The state: versioned, exact through JSON, plugins included, unknown plugins kept with a warning."""

from __future__ import annotations

import json

import pytest

import toolctx
from toolctx.assembly import (
    STATE_VERSION,
    AssemblerState,
    ContextAssembler,
    Event,
    PlanPlugin,
    StateVersionError,
    ToolOutputPlugin,
)
from toolctx.errors import ConfigError

from .conftest import CharCounter, run, tool_turn


def busy(s: toolctx.ContextSession) -> ContextAssembler:
    ctx = ContextAssembler(max_tokens=4000, counter=CharCounter(), session=s, strategy="adaptive", system_prompt="sys")
    plan = ctx.register_plugin(PlanPlugin({"goal": "g", "tasks": [{"id": "1", "description": "one"}]}))
    plan.update_task_status("1", "in_progress")
    ctx.register_plugin(ToolOutputPlugin(session=s, high_water=10**9, keep=1))
    ctx.set_current_input("go")
    ctx.add_message("user", "pinned rules", {"weight": 0.5, "tags": ["a"]}, pinned=True)
    for i in range(12):
        tool_turn(ctx, i, f"out {i} " + "x" * 300)
    return ctx


def test_state_round_trips_exactly_through_json_and_restores_the_same_prompt(s: toolctx.ContextSession) -> None:
    ctx = busy(s)
    prepared = run(ctx.prepare())
    assert prepared.compacted
    state = ctx.get_state()
    assert state.version == STATE_VERSION
    text = state.model_dump_json()
    assert AssemblerState.model_validate_json(text) == state
    assert json.loads(text)["plugins"]["plan"]["tasks"][0]["status"] == "in_progress"

    again = ContextAssembler(counter=CharCounter(), session=s)
    again.register_plugin(PlanPlugin())
    again.register_plugin(ToolOutputPlugin(session=s, high_water=10**9, keep=1))
    restored: list[Event] = []
    again.on("state_restored", restored.append)
    again.restore_state(text)
    assert again.get_state() == state
    assert again.get_config() == ctx.get_config()
    assert run(again.prepare()).to_openai() == run(ctx.prepare()).to_openai()
    assert restored


def test_a_plugin_state_without_its_plugin_is_kept_and_restored_later(s: toolctx.ContextSession) -> None:
    state = busy(s).get_state()
    bare = ContextAssembler(session=s)
    with pytest.warns(toolctx.ToolctxWarning) as warned:
        bare.restore_state(state)
    assert sorted(str(w.message).split("'")[1] for w in warned) == ["plan", "tool_outputs"]
    assert bare.get_state().plugins == state.plugins  # nothing lost
    plan = bare.register_plugin(PlanPlugin())
    assert plan.get_plan().tasks[0].status == "in_progress"


def test_unknown_versions_and_broken_states_change_nothing(s: toolctx.ContextSession) -> None:
    ctx = busy(s)
    before = ctx.get_state()
    newer = {**before.model_dump(mode="json"), "version": STATE_VERSION + 1}
    with pytest.raises(StateVersionError, match="upgrade toolctx"):
        ctx.restore_state(newer)
    with pytest.raises(StateVersionError, match="not written by"):
        ctx.restore_state({"history": []})
    with pytest.raises(ConfigError, match="must be JSON"):
        ctx.restore_state("{not json")
    broken = before.model_dump(mode="json")
    broken["history"][0]["role"] = "robot"
    with pytest.raises(ConfigError, match="history"):
        ctx.restore_state(broken)
    assert ctx.get_state() == before


def test_a_plugin_whose_state_cannot_be_saved_says_so() -> None:
    class Odd:
        name, priority, compactable = "odd", 3, False

        def get_component(self) -> str:
            return "odd"

        def get_state(self) -> object:
            return {"when": object()}

    ctx = ContextAssembler(plugins=[Odd()])
    with pytest.raises(ConfigError, match="plugin 'odd': get_state"):
        ctx.get_state()
