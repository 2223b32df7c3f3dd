"""Automatic flash save before a model call and re-tiering as the agent works and when a task completes."""

from __future__ import annotations

from typing import Any

import pytest

from toolctx.errors import ConfigError
from toolctx.memory import MemoryConfig, MemoryStore, MemoryTriggers, Tier

from .conftest import FakeClock


def _record(store: MemoryStore) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    store.subscribe(events.append)
    return events


def test_a_prompt_at_80_percent_of_the_window_flash_saves_once_per_crossing(store: MemoryStore) -> None:
    agent = store.agent("worker")
    task = agent.save("TASK", "the task")
    agent.save_many([("ERROR", f"error {n}") for n in range(3)])
    for n in range(80):  # the errors are left alone while the agent works: they turn COLD
        agent.save("TEST_RESULT", f"run {n}", loaded=False)
    events = _record(store)

    assert store.before_model_call("worker", prompt_tokens=7_999, window=10_000) is None
    assert [e["event"] for e in events] == ["tiers_updated"]  # steps were taken: re-tiered
    stats = agent.stats()
    assert stats.archived_count == 0
    assert stats.cold_count > 3

    result = store.before_model_call("worker", prompt_tokens=8_000, window=10_000)
    assert result is not None
    assert result.items_archived == stats.cold_count
    assert {item.item_type for item in agent.items(archived=True) if item.archived} == {"ERROR", "TEST_RESULT"}
    assert agent.items(Tier.COLD) == []
    assert [item.id for item in agent.working_set()] == [task.id]
    flash = events[-1]
    assert flash["event"] == "flash_saved"
    assert (flash["trigger"], flash["prompt_tokens"], flash["window"]) == ("window", 8_000, 10_000)
    assert flash["checkpoint_id"] == result.checkpoint_id

    # Still full: no second checkpoint until the prompt has fallen under the threshold.
    assert store.before_model_call("worker", prompt_tokens=9_000, window=10_000) is None
    assert store.before_model_call("worker", prompt_tokens=1_000, window=10_000) is None
    assert store.before_model_call("worker", prompt_tokens=9_500, window=10_000) is not None
    assert len(agent.checkpoints()) == 2


def test_without_steps_there_is_nothing_to_retier(store: MemoryStore) -> None:
    store.agent("worker").save("CODE", "x = 1")
    events = _record(store)
    store.before_model_call("worker", 10, 1_000)
    store.before_model_call("worker", 10, 1_000)
    assert [e["trigger"] for e in events] == ["model_call"]


def test_each_trigger_is_switched_off_by_its_option(db_url: str, clock: FakeClock) -> None:
    off = {"flash_save": False, "retier_before_calls": False, "retier_on_task_complete": False}
    with MemoryStore(db_url, config=MemoryConfig(clock=clock), triggers=off) as store:
        agent = store.agent("worker")
        task = agent.save("TASK", "the task")
        events = _record(store)
        assert store.before_model_call("worker", 10_000, 10_000) is None
        assert store.task_completed("worker") is None
        assert events == []
        assert agent.checkpoints() == []
        assert agent.get(task.id).tier is Tier.HOT


def test_task_completed_unpins_the_task_and_retiers(store: MemoryStore) -> None:
    agent = store.agent("worker")
    task = agent.save("TASK", "the task")
    for n in range(200):
        agent.save("TEST_RESULT", f"run {n}", loaded=False)
    store.before_model_call("worker", 0, 1_000)
    assert agent.get(task.id).tier is Tier.HOT  # pinned while the task is open
    events = _record(store)
    result = store.task_completed("worker")
    assert result is not None
    assert result.hot_count == 1
    assert agent.get(task.id).tier is Tier.HOT  # decays from now on, not from its save
    assert [(e["event"], e["trigger"]) for e in events] == [("tiers_updated", "task_completed")]
    for n in range(100):
        agent.save("TEST_RESULT", f"later run {n}", loaded=False)
    store.before_model_call("worker", 0, 1_000)
    assert agent.get(task.id).tier is Tier.COLD


def test_a_new_agent_is_registered_by_its_first_call(store: MemoryStore) -> None:
    assert store.before_model_call("newcomer", 0, 1_000) is None
    assert store.agent_ids() == []  # nothing to write yet
    assert store.before_model_call("newcomer", 900, 1_000) is not None
    assert store.agent_ids() == ["newcomer"]


def test_bad_arguments_are_named(store: MemoryStore) -> None:
    with pytest.raises(ConfigError, match="prompt_tokens"):
        store.before_model_call("worker", -1, 1_000)
    with pytest.raises(ConfigError, match="window"):
        store.before_model_call("worker", 10, 0)
    with pytest.raises(ConfigError, match="agent_id"):
        store.before_model_call("", 10, 100)
    with pytest.raises(ConfigError, match="flash_fraction"):
        MemoryTriggers(store, flash_fraction=1.5)
    with pytest.raises(TypeError, match="unexpected keyword"):
        MemoryStore("sqlite://", triggers={"flash": True})
    assert store.agent_ids() == []
